// The command line (src/cli/index.ts, compiled as the tests are) as a child process, as an operator
// runs it.
import { execFile } from 'node:child_process'
import { entryPoint, ROOT } from './paths.js'

/** Runs the command line with only PATH and `env` in its environment; resolves with its exit code and output. */
export function runCli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...entryPoint('src/cli/index.ts'), ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH!, ...env } },
      (err, stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr })
      },
    )
  })
}

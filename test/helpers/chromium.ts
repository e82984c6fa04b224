// Headless Chromium for the end-to-end browser tests: Debian's chromium package, driven by playwright-core;
// and the web origins its pages come from: a local server each, and the page's code bundled as a front end's.
import { createServer, type RequestListener } from 'node:http'
import type { BuildOptions } from 'esbuild'
import type { Page } from 'playwright-core'
import t from 'tap'
import { listenUntilEnd } from './serve.js'

export const CHROMIUM = '/usr/bin/chromium'

/** Launches Chromium for this test file; it is closed when the file's tests end. */
export async function launchChromium() {
  const { chromium } = await import('playwright-core')
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
  t.teardown(() => browser.close())
  return browser
}

/**
 * A passkey authenticator built into the device of `page`, as a phone's or a laptop's: the DevTools
 * protocol's virtual one (internal, resident keys, the user verified, presence simulated). The
 * session that drives it and its id, to read its credentials.
 */
export async function addPlatformAuthenticator(page: Page) {
  const cdp = await page.context().newCDPSession(page)
  await cdp.send('WebAuthn.enable')
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  })
  return { cdp, authenticatorId }
}

/** Serves a web origin on `host`:`port` (a free port for 0) until this file's tests end. Returns the port. */
export function serveOrigin(handler: RequestListener, { port = 0, host = 'localhost' } = {}): Promise<number> {
  return listenUntilEnd(createServer(handler), { port, host })
}

/** A front end's page: `body`, then the module /main.js, which is `script`; every other path is the page. */
export function pageWithScript(script: string, body = ''): RequestListener {
  return (req, res) => {
    if (req.url?.startsWith('/main.js')) {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' })
      res.end(script)
      return
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end(`<!doctype html><title>Web</title>${body}<script type="module" src="/main.js"></script>`)
  }
}

/** Bundles a page's code as a front end's build would: one ES2022 module for the browser, in memory. */
export async function bundleForBrowser(options: Pick<BuildOptions, 'stdin' | 'entryPoints' | 'alias' | 'define'>) {
  const esbuild = await import('esbuild')
  const bundle = await esbuild.build({
    ...options,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    metafile: true,
    logLevel: 'silent',
  })
  return { script: bundle.outputFiles[0]!.text, inputs: bundle.metafile.inputs }
}

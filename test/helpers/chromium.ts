// Headless Chromium for the end-to-end browser tests: Debian's chromium package, driven by playwright-core.
import t from 'tap'

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

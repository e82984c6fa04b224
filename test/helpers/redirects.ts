// The redirect targets an attacker tries, for every test of a place that takes one from a client
// (the one redirect rule, src/shared/redirect.ts, must refuse them all wherever it is applied).
import { WEB_ORIGIN } from './app.js'

// What an attacker tries: characters the URL parser drops or rewrites, other hosts spelled as paths,
// other schemes, user-info, white space around the value.
export const HOSTILE = [
  '/\t/attacker.example/x',
  '/\r\n/attacker.example',
  '/\n/attacker.example',
  '/\r/attacker.example',
  '\t/x',
  '/x\t',
  ' /x',
  '/x ',
  '\u00a0/x',
  '/x\u2028',
  '\u0000/x',
  '/x\u007f',
  '/x\u0085',
  '//attacker.example',
  '///attacker.example',
  '/\\attacker.example',
  '\\\\attacker.example',
  '\\/attacker.example',
  '/x\\y',
  'https://attacker.example',
  'https:attacker.example',
  'https:/attacker.example',
  'HTTPS://ATTACKER.EXAMPLE',
  'javascript:alert(1)',
  'JaVaScRiPt:alert(1)',
  'data:text/html,<script>alert(1)</script>',
  'vbscript:x',
  'file:///etc/passwd',
  `${WEB_ORIGIN}@attacker.example/`,
  `http://user:pass@${WEB_ORIGIN.slice(7)}/`,
  `${WEB_ORIGIN}.attacker.example/`,
  'http://localhost:3001/',
  'https://localhost:3000/',
  'ftp://localhost:3000/',
  'blob:http://localhost:3000/x',
  // These stay on the web origin but leave a path that starts with "//", off-site to a path router.
  '/.//attacker.example',
  '/%2e//attacker.example',
  '/x/..//attacker.example',
]

/** A printable name for a hostile value: the TAP stream must not carry its raw control characters. */
export const label = (value: string) =>
  JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)

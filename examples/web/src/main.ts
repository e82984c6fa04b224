// The example app: every way in, then the signed-in page (profile, journal, a sandbox purchase, the
// ways in to add) and sign-out. better-auth's client answers {data, error}; oRPC's client throws
// ORPCError. Both are shown in #status, the words a person reads.
import { ORPCError } from '@orpc/client'
import { api } from './api'
import { authClient } from './auth-client'

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T
const form = (id: string) => $<HTMLFormElement>(id)
const input = (f: HTMLFormElement, name: string) => f.elements.namedItem(name) as HTMLInputElement
const field = (f: HTMLFormElement, name: string) => input(f, name).value
const say = (text: string) => {
  $('status').textContent = text
}
const here = () => `${location.origin}/`

/** What went wrong, for a person: the service's message, and how long to wait after a 429. */
function explain(error: unknown): string {
  if (error instanceof ORPCError) {
    const wait = (error.data as { retryAfter?: number } | undefined)?.retryAfter
    return `${error.code}: ${error.message}${wait ? ` (try again in ${wait} s)` : ''}`
  }
  if (error && typeof error === 'object' && 'message' in error) {
    const { code, message } = error as { code?: string; message?: string }
    return `${code ?? 'ERROR'}: ${message}`
  }
  return String(error)
}

/** Runs a better-auth call; its data, or null after saying what went wrong. */
async function auth<T>(call: Promise<{ data: T; error: null } | { data: null; error: unknown }>): Promise<T | null> {
  const { data, error } = await call
  if (error) say(explain(error))
  return error ? null : data
}

function onSubmit(id: string, handle: (f: HTMLFormElement) => Promise<unknown>) {
  form(id).addEventListener('submit', (event) => {
    event.preventDefault()
    handle(form(id)).catch((error: unknown) => say(explain(error)))
  })
}

function onClick(id: string, handle: () => Promise<unknown>) {
  $(id).addEventListener('click', () => {
    handle().catch((error: unknown) => say(explain(error)))
  })
}

/** After a sign-in: the second step when it is due, else the signed-in page. */
async function signedIn(data: object | null) {
  if (!data) return
  if ('twoFactorRedirect' in data && data.twoFactorRedirect) {
    form('two-factor').hidden = false
    say('Enter the code from your authenticator app.')
    return
  }
  await render()
}

// Signed out: the ways in.
onSubmit('sign-up', async (f) => {
  const name = field(f, 'name')
  await signedIn(await auth(authClient.signUp.email({ name, email: field(f, 'email'), password: field(f, 'password') })))
})
onSubmit('sign-in-password', async (f) => {
  await signedIn(await auth(authClient.signIn.email({ email: field(f, 'email'), password: field(f, 'password') })))
})
input(form('sign-in-code'), 'send').addEventListener('click', () => {
  const email = field(form('sign-in-code'), 'email')
  auth(authClient.emailOtp.sendVerificationOtp({ email, type: 'sign-in' })).then(
    (sent) => sent && say(`A code is on its way to ${email}.`),
    (error: unknown) => say(explain(error)),
  )
})
onSubmit('sign-in-code', async (f) => {
  await signedIn(await auth(authClient.signIn.emailOtp({ email: field(f, 'email'), otp: field(f, 'code') })))
})
onSubmit('sign-in-link', async (f) => {
  const email = field(f, 'email')
  const sent = await auth(authClient.signIn.magicLink({ email, callbackURL: here() }))
  if (sent) say(`A sign-in link is on its way to ${email}.`)
})
onClick('sign-in-passkey', async () => signedIn(await auth(authClient.signIn.passkey())))
onSubmit('two-factor', async (f) => {
  if (await auth(authClient.twoFactor.verifyTotp({ code: field(f, 'code') }))) {
    f.hidden = true
    await render()
  }
})

// Signed in: profile, journal, a purchase, more ways in, sign-out.
onSubmit('profile', async (f) => {
  const profile = await api.updateProfile({ name: field(f, 'name') })
  say(`Saved: ${profile.name}.`)
  await render()
})
onSubmit('journal', async (f) => {
  await api.journal.createEntry({ content: field(f, 'content'), mood: Number(field(f, 'mood')) })
  f.reset()
  await render()
})
onClick('buy-premium', async () => {
  const checkout = await api.payment.createCheckout({ product: 'premium_month', returnUrl: here() })
  location.assign(checkout.redirectUrl) // the gateway's page; it sends the browser back with ?paymentId=
})
// A second factor is set up only once the address was proven in this session (a mailbox never
// beats a second factor: the service answers 403 EMAIL_NOT_PROVEN otherwise).
input(form('verify-address'), 'send').addEventListener('click', () => {
  auth(authClient.emailOtp.sendVerificationOtp({ email: $('who').textContent!, type: 'email-verification' })).then(
    (sent) => sent && say('A code is on its way.'),
    (error: unknown) => say(explain(error)),
  )
})
onSubmit('verify-address', async (f) => {
  if (await auth(authClient.emailOtp.verifyEmail({ email: $('who').textContent!, otp: field(f, 'code') })))
    say('Address verified.')
})
onClick('add-passkey', async () => {
  if (await auth(authClient.passkey.addPasskey({ name: 'This browser' }))) say('Passkey added.')
})
onSubmit('enable-two-factor', async (f) => {
  const enabled = await auth(authClient.twoFactor.enable({ password: field(f, 'password') }))
  if (!enabled) return
  $('totp-uri').textContent = enabled.totpURI // an app shows it as a QR code
  form('confirm-two-factor').hidden = false
})
onSubmit('confirm-two-factor', async (f) => {
  if (await auth(authClient.twoFactor.verifyTotp({ code: field(f, 'code') }))) {
    f.hidden = true
    say('Two-factor is on.')
  }
})
onClick('sign-out', async () => {
  await auth(authClient.signOut())
  say('Signed out.')
  await render()
})

/** Shows the page for the session the browser holds. The three reads go out together: one batch. */
async function render() {
  const { data: session } = await authClient.getSession()
  $('signed-out').hidden = session !== null
  $('signed-in').hidden = session === null
  if (!session) {
    const last = authClient.getLastUsedLoginMethod()
    $('last-method').textContent = last ? `Last time you signed in with: ${last}` : ''
    return
  }
  const [profile, plan, journal] = await Promise.all([
    api.getProfile(),
    api.getPlanAndUsage(),
    api.journal.listEntries({ limit: 10 }),
  ])
  $('who').textContent = profile.email
  $('role').textContent = session.user.role
  $('plan').textContent = plan.plan
  input(form('profile'), 'name').value = profile.name
  $('entries').replaceChildren(
    ...journal.items.map((entry) => {
      const li = document.createElement('li')
      li.textContent = `${entry.createdAt.toLocaleDateString()}: ${entry.content} (mood ${entry.mood})`
      return li
    }),
  )
}

/** Back from the gateway (?paymentId=) or a mailed link that needs the second step (?twoFactorRedirect=true). */
async function arrive() {
  const params = new URLSearchParams(location.search)
  history.replaceState(null, '', location.pathname)
  const paymentId = params.get('paymentId')
  if (paymentId) {
    const payment = await api.payment.verifyPayment({ paymentId })
    say(`Payment ${payment.status}.`)
  }
  if (params.get('twoFactorRedirect') === 'true') return signedIn({ twoFactorRedirect: true })
  await render()
}

arrive().catch((error: unknown) => say(explain(error)))

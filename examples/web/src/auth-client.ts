// src/auth-client.ts
import { passkeyClient } from '@better-auth/passkey/client'
import { createAuthClient } from 'better-auth/client'
import {
  anonymousClient,
  emailOTPClient,
  inferAdditionalFields,
  jwtClient,
  lastLoginMethodClient,
  magicLinkClient,
  twoFactorClient,
} from 'better-auth/client/plugins'

export const authClient = createAuthClient({
  baseURL: import.meta.env.VITE_API_URL ?? 'http://localhost:8787', // the API
  plugins: [
    twoFactorClient(), // TOTP and backup codes
    emailOTPClient(), // six-digit codes by mail: sign-in, verification, reset
    magicLinkClient(), // sign-in links by mail
    lastLoginMethodClient(), // "last time you signed in with ..."
    passkeyClient(), // passkeys: add one, sign in with it
    jwtClient(), // tokens for the AI backend: authClient.$fetch('/token'), authClient.jwks()
    anonymousClient(), // guests: authClient.signIn.anonymous(), kept when they sign up or in later
    inferAdditionalFields({
      user: {
        role: { type: ['member', 'admin', 'owner'], input: false },
        plan: { type: ['free', 'premium', 'premium_plus'], input: false },
        planExpiresAt: { type: 'date', input: false, required: false },
        isAnonymous: { type: 'boolean', input: false, required: false },
      },
    }),
  ],
})

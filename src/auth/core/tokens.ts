// The secrets of sessions and emailed links: 256 random bits handed to the client, and the SHA-256
// the database keeps instead, so a database dump alone never yields a working cookie or link.
import { hash, randomBytes } from 'node:crypto'

export const newToken = (): string => randomBytes(32).toString('base64url')

export const hashToken = (token: string): string => hash('sha256', token, 'hex')

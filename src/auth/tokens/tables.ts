import type { ColumnType } from 'kysely'

/** A signing key of the tokens (migration 0019_jwks). */
export interface JwksTable {
  /** The key id: the tokens' `kid`. */
  id: string
  /** The public JWK, as JSON text. */
  public_key: string
  /** The private JWK, sealed (keys.ts): never readable without AUTH_SECRET. */
  private_key: string
  created_at: ColumnType<Date, Date, never>
  /** It signs until then; it is served until its last token expired. */
  expires_at: ColumnType<Date, Date, never>
}

export interface TokenTables {
  jwks: JwksTable
}

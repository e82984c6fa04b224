/// <reference types="vite/client" />
interface ImportMetaEnv {
  /** The API's origin; http://localhost:8787 when unset. */
  readonly VITE_API_URL?: string
}

// oidc-provider ships no types; the tests use a handful of its calls.
declare module 'oidc-provider' {
  const Provider: any
  export default Provider
}

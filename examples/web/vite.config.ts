import { defineConfig } from 'vite'

// Port 3000: the origin the API trusts by default (WEB_ORIGIN=http://localhost:3000).
export default defineConfig({
  server: { port: 3000, strictPort: true },
  preview: { port: 3000, strictPort: true },
  build: { target: 'es2022' },
})

# syntax=docker/dockerfile:1
# Multi-stage build: compile with the dev dependencies, ship only the compiled code and the
# production dependencies, run as the unprivileged `node` user. No secrets are baked in: the
# configuration comes from the environment at run time (see .env.example).

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The workspace's manifest, which the lockfile names; the server does not import the package.
COPY packages/contract/package.json ./packages/contract/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY db ./db
COPY migrations ./migrations
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:24-bookworm-slim AS runtime
# NPM_CONFIG_IGNORE_SCRIPTS: `npm run migrate` / `npm run cli` run the compiled code as it is,
# without their build pre-scripts (there is no tsc in this image).
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8787 \
    PGLITE_DIR=/app/data \
    NPM_CONFIG_IGNORE_SCRIPTS=true \
    NPM_CONFIG_UPDATE_NOTIFIER=false
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json /app/package-lock.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 8787
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8787) + '/api/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node itself is PID 1 and handles SIGTERM (graceful shutdown in src/server.ts).
CMD ["node", "dist/src/server.js"]

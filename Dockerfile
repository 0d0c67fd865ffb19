# syntax=docker/dockerfile:1
# The topovol-controller-manager image (config/manager refers to it as
# ghcr.io/topovol/topovol-controller-manager:<version>):
#   docker build -t ghcr.io/topovol/topovol-controller-manager:v0.1.0 .
# hack/docker-build-stage.sh runs this file's build-stage RUN lines and runtime-stage COPY lines
# without a Docker engine and checks the result starts, so keep to what it understands: one
# logical line per RUN (backslash continuations are fine), ENV K=V, WORKDIR /src in the build
# stage, and COPY --from=build /src/<path> <path> in the runtime stage.

# Node 24 LTS (supported until April 2028): Node 20 reached end of life in April 2026 (docs/adr/0011).
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
ENV CI=true
COPY . .
# The pnpm that package.json pins, with npm: corepack's signature check fails for it (docs/adr/0004).
RUN npm install --global --no-audit --no-fund "pnpm@$(node -p "require('./package.json').packageManager.split('@')[1]")"
RUN pnpm install --frozen-lockfile
RUN pnpm exec tsc -b tsconfig.build.json
# Production dependencies only (a fresh install: --prod over a dev install leaves the dev packages in
# node_modules/.pnpm); tsc does not copy csi.proto, which the capacity loop loads at run time. The
# image carries the runtime and the controllers: the test harness, the manifest renderers and the
# end-to-end suite are workspace packages nothing at run time imports, so they are dropped.
RUN rm -rf node_modules packages/*/node_modules \
 && pnpm install --frozen-lockfile --prod --offline \
 && cp packages/shared/src/csi/csi.proto packages/shared/dist/src/csi/ \
 && rm -rf packages/testing packages/manifests packages/e2e \
 && rm -rf packages/*/src packages/*/test packages/*/bench packages/*/dist/test packages/*/dist/bench packages/*/dist/.tsbuildinfo

# Same Node as the build (node_modules must match it); the slim Debian image.
FROM ${NODE_IMAGE}
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /src/package.json package.json
COPY --from=build /src/node_modules node_modules
COPY --from=build /src/packages packages
COPY --from=build /src/bin bin
# The restricted securityContext in config/manager runs as 65532 too (the distroless "nonroot" uid).
USER 65532:65532
ENTRYPOINT ["node", "bin/topovol-controller-manager.js"]

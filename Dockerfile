# airlock worker image: one image, one entry point per task queue (see docker-compose.temporal.yml).
FROM node:24.11-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
# `npm ci` runs the build (prepare); dev dependencies are dropped afterwards.
RUN npm ci && npm prune --omit=dev

FROM node:24.11-bookworm-slim
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
ENV AIRLOCK_DATA_DIR=/data
# The mount points of the compose file's volumes, owned by the user the services run as (a new volume takes them over).
RUN mkdir -p /data /codec /grant /grant-public && chown node:node /data /codec /grant /grant-public && chmod 700 /grant
USER node
CMD ["node", "bin/airlock.js", "--help"]

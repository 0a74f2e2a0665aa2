# airlock worker image: one image, one entry point per task queue (see docker-compose.temporal.yml).
FROM node:20-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
# `npm ci` runs the build (prepare); dev dependencies are dropped afterwards.
RUN npm ci && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
ENV AIRLOCK_DATA_DIR=/data
RUN mkdir -p /data && chown node:node /data
USER node
CMD ["node", "bin/airlock.js", "--help"]

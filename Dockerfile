# One image for every role; docker-compose.yml picks the role with the command.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:20-bookworm-slim
# bubblewrap sandboxes run_command (EXEC_SANDBOX=bwrap); bash and prlimit (util-linux) are in the base image.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# The terminal chat (`npm run chat`) runs from source with tsx, a runtime dependency.
COPY tsconfig.json ./
COPY src ./src
RUN mkdir -p /data/workspaces && chown -R node:node /data
ENV WORKSPACE_ROOT=/data/workspaces
# Unprivileged on purpose: the kernel applies run_command's process cap (RLIMIT_NPROC) to no root process.
USER node
EXPOSE 3000
# node directly (not npm) so SIGTERM reaches the process and active runs drain.
CMD ["node", "dist/cli/main.js", "all"]

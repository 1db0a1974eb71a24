# One image for every role; docker-compose.yml picks the role with the command.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY tsconfig.json ./
COPY src ./src
RUN mkdir -p /data/workspaces && chown -R node:node /data
ENV WORKSPACE_ROOT=/data/workspaces
USER node
EXPOSE 3000
# node directly (not npm) so SIGTERM reaches the process and active runs drain.
CMD ["node", "--import", "tsx", "src/cli/main.ts", "all"]

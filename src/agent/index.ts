export { runAgent, REPEAT_NUDGE, EMPTY_NUDGE } from './loop.js';
export { createOpenAIModel, type OpenAIModelOptions } from './openai-model.js';
export { DEFAULT_SYSTEM_PROMPT } from './prompt.js';
export { boundHistory, compactTurn } from './history.js';
export { estimateTokens, estimateTextTokens } from './budget.js';
export { isComplete } from './resolve.js';
export type * from './types.js';

import OpenAI from 'openai';

/** Turns texts into vectors (EMBEDDINGS_MODEL at the OpenAI-compatible endpoint). */
export interface Embedder {
  readonly model: string;
  embed(texts: readonly string[]): Promise<number[][]>;
}

/** The OpenAI-compatible `/embeddings` endpoint of the model's base URL (OpenAI, Ollama, vLLM and llama.cpp's server speak it). */
export function openAIEmbedder(options: { apiKey: string; baseURL: string | undefined; model: string; timeoutMs: number }): Embedder {
  const client = new OpenAI({
    apiKey: options.apiKey || 'unused',
    ...(options.baseURL && { baseURL: options.baseURL }),
    maxRetries: 2,
    timeout: options.timeoutMs,
  });
  return {
    model: options.model,
    async embed(texts) {
      if (texts.length === 0) return [];
      // float: every OpenAI-compatible server answers it (base64, the SDK's default, is OpenAI's own).
      const res = await client.embeddings.create({ model: options.model, input: [...texts], encoding_format: 'float' });
      return [...res.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
    },
  };
}

export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

import { startFakeOpenAI } from '../fakes/openai-server.js';
const fake = await startFakeOpenAI();
fake.setHandler((req) => {
  const msgs = req.body.messages;
  const last = msgs[msgs.length - 1];
  if (last.role === 'tool') return { content: `The file says: ${String(last.content).slice(0, 80)}` };
  if (String(last.content).includes('read'))
    return { content: 'Let me look at the notes.', toolCalls: [{ name: 'read_file', arguments: JSON.stringify({ path: 'notes.md' }) }] };
  return { content: `You said: ${last.content}` };
});
console.log(fake.baseURL);

// The official openai npm package, as a TypeScript or JavaScript agent uses
// it, against toolguard-proxy. Run by node_test.go:
//
//   NODE_PATH=<dir>/node_modules OPENAI_BASE_URL=http://127.0.0.1:port/v1 node openai_client.cjs <case>
//
// It prints one JSON line: what the client's own accessors read.
'use strict';

const { OpenAI } = require('openai');
const { VERSION } = require('openai/version');

const client = new OpenAI({ apiKey: 'sk-test-npm', maxRetries: 0 });

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    },
  },
}];
const messages = [{ role: 'user', content: 'Weather in Paris?' }];

const cases = {
  // A bad call is re-asked behind the proxy: the client reads the corrected one.
  async reask() {
    const c = await client.chat.completions.create({ model: 'gpt-4o', messages, tools });
    const m = c.choices[0].message;
    return { id: c.id, content: m.content, tool_calls: m.tool_calls, finish_reason: c.choices[0].finish_reason };
  },

  // Streaming: the SDK's accumulator (ChatCompletionStream) reads the
  // corrected call and the text once.
  async stream() {
    const stream = client.chat.completions.stream({ model: 'gpt-4o', messages, tools });
    const deltas = [];
    stream.on('content', (delta) => deltas.push(delta));
    const c = await stream.finalChatCompletion();
    const m = c.choices[0].message;
    return {
      id: c.id, content: m.content, content_deltas: deltas,
      tool_calls: m.tool_calls.map((tc) => ({ id: tc.id, name: tc.function.name, arguments: tc.function.arguments })),
      finish_reason: c.choices[0].finish_reason,
    };
  },

  // A request without tools passes through: the raw body as the client
  // received it.
  async passthrough() {
    const resp = await client.chat.completions.create({ model: 'gpt-4o', messages }).asResponse();
    return { status: resp.status, body: await resp.text() };
  },
};

(async () => {
  const name = process.argv[2];
  if (!cases[name]) {
    throw new Error(`unknown case ${name}`);
  }
  const out = await cases[name]();
  out.openai = VERSION;
  process.stdout.write(JSON.stringify(out) + '\n');
})().catch((err) => {
  process.stderr.write(String(err && err.stack || err) + '\n');
  process.exit(1);
});

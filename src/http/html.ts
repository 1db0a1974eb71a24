const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: unknown): string {
  return String(text).replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:16px 24px;color:#1d2433;background:#f6f7f9}
h1{font-size:20px;margin:8px 0 4px}h2{font-size:16px;margin:22px 0 8px}
a{color:#2458c6}.muted{color:#6b7385}
.state{display:inline-block;padding:2px 8px;border-radius:10px;font-weight:600}
.completed{background:#d9f2e1;color:#17603a}.failed{background:#fbe0e0;color:#8a1c1c}.cancelled{background:#eee6d6;color:#6b4d12}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:8px 0}dt{color:#6b7385}dd{margin:0}
.msg{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:8px 12px;margin:8px 0}
.role{font-size:12px;font-weight:700;text-transform:uppercase;color:#6b7385;margin-bottom:4px}
.msg.user{border-left:4px solid #2458c6}.msg.assistant{border-left:4px solid #17603a}.msg.tool{border-left:4px solid #a0a7b4}
pre{white-space:pre-wrap;word-break:break-word;margin:4px 0;font:12.5px/1.4 ui-monospace,monospace;background:#f1f3f6;padding:6px 8px;border-radius:4px}
table{border-collapse:collapse;width:100%;background:#fff}td,th{border:1px solid #dde1e8;padding:4px 8px;text-align:left;vertical-align:top}th{background:#eef0f4}
form.login{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:16px;max-width:360px}
input{font:inherit;padding:6px 8px;width:100%;box-sizing:border-box;margin:6px 0 12px}button{font:inherit;padding:6px 14px}
</style></head><body>${body}</body></html>`;
}

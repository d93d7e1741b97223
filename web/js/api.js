// HTTP helpers for the console: JSON calls, error decoding and a POST-capable SSE reader.
// When the server has an API key, every call sends it as X-API-Key; on 401 the page asks the
// operator for the key (see setKeyPrompt) and retries.

const API_KEY_STORAGE = "sb.apiKey";

// Kept for this tab only (sessionStorage): closing the tab forgets the key.
export function getApiKey() {
  try {
    return sessionStorage.getItem(API_KEY_STORAGE) || "";
  } catch {
    return "";
  }
}

export function setApiKey(value) {
  if (value) sessionStorage.setItem(API_KEY_STORAGE, value);
  else sessionStorage.removeItem(API_KEY_STORAGE);
}

let keyPrompt = null;
let pendingPrompt = null;

/** `prompt(reason)` resolves to a key the operator entered, or null when they cancel. */
export function setKeyPrompt(prompt) {
  keyPrompt = prompt;
}

function askForKey(reason) {
  // Several calls failing together share one dialog.
  pendingPrompt ??= keyPrompt(reason).finally(() => {
    pendingPrompt = null;
  });
  return pendingPrompt;
}

/** An HTTP error carrying the server's `{"error", "message"}` body. */
export class ApiError extends Error {
  constructor(status, code, message, body) {
    super(message || code || `HTTP ${status}`);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.body = body;
  }

  /** What to show the operator: the server's message, its code and a hint for 401. */
  describe() {
    const parts = [this.message];
    const tag = [this.code, this.status ? `HTTP ${this.status}` : ""].filter(Boolean).join(", ");
    if (tag && tag !== this.message) parts.push(`(${tag})`);
    if (this.status === 401) parts.push("— 请点击右上角「API Key」填写服务端配置的 API_KEY。");
    return parts.join(" ");
  }
}

export function describeError(err) {
  if (err instanceof ApiError) return err.describe();
  if (err && err.name === "AbortError") return "已取消";
  if (err instanceof TypeError) return `无法连接服务器：${err.message}（服务是否在运行？）`;
  return String((err && err.message) || err);
}

async function errorFrom(resp) {
  let body = null;
  let text = "";
  try {
    text = await resp.text();
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  let message = "";
  let code = `http_${resp.status}`;
  if (body && typeof body === "object") {
    code = body.error || code;
    if (typeof body.message === "string") message = body.message;
    else if (typeof body.detail === "string") message = body.detail;
    else if (Array.isArray(body.detail))
      message = body.detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`).join("; ");
  }
  if (!message) message = text && text.length < 300 ? text : resp.statusText || `HTTP ${resp.status}`;
  return new ApiError(resp.status, code, message, body);
}

function headersFor(hasJson) {
  const headers = { Accept: "application/json" };
  if (hasJson) headers["Content-Type"] = "application/json";
  const key = getApiKey();
  if (key) headers["X-API-Key"] = key;
  return headers;
}

/** fetch() with the key; a 401 asks for the key and tries again until it works or is cancelled. */
async function send(path, { json, ...init }, extraHeaders = {}) {
  for (;;) {
    let resp;
    try {
      resp = await fetch(path, { ...init, headers: { ...headersFor(json), ...extraHeaders } });
    } catch (err) {
      if (err && err.name === "AbortError") throw err;
      throw new ApiError(0, "network", `无法连接服务器：${err.message}`, null);
    }
    if (resp.status !== 401 || !keyPrompt) return resp;
    const err = await errorFrom(resp);
    const key = await askForKey(err.message);
    if (!key) throw err;
    setApiKey(key);
  }
}

export function withQuery(path, params) {
  if (!params) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** JSON request. Options: method, json (body object), form (FormData), query, signal. */
export async function api(path, { method = "GET", json, form, query, signal } = {}) {
  const resp = await send(withQuery(path, query), {
    method,
    json: json !== undefined,
    body: json !== undefined ? JSON.stringify(json) : form,
    signal,
  });
  if (!resp.ok) throw await errorFrom(resp);
  if (resp.status === 204) return null;
  const type = resp.headers.get("content-type") || "";
  return type.includes("json") ? resp.json() : resp.text();
}

/**
 * POST `body` and read the Server-Sent Events of the response (EventSource cannot POST).
 * `onEvent(type, data)` is called per event; data is parsed JSON (or the raw string).
 * Resolves when the stream ends; rejects with ApiError for an HTTP error status.
 */
export async function streamSSE(path, body, { onEvent, signal } = {}) {
  const resp = await send(
    path,
    { method: "POST", json: true, body: JSON.stringify(body ?? {}), signal },
    { Accept: "text/event-stream" },
  );
  if (!resp.ok) throw await errorFrom(resp);
  if (!resp.body) throw new ApiError(resp.status, "no_stream", "浏览器不支持流式响应", null);
  const reader = resp.body.getReader();
  const decoder = new TextDecoder("utf-8");
  let buffer = "";
  let carry = ""; // a trailing "\r" may be the first half of a "\r\n" split across chunks
  const dispatch = (block) => {
    let type = "message";
    const data = [];
    for (const raw of block.split("\n")) {
      if (!raw || raw.startsWith(":")) continue; // comment / keep-alive ping
      const idx = raw.indexOf(":");
      const field = idx === -1 ? raw : raw.slice(0, idx);
      let value = idx === -1 ? "" : raw.slice(idx + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") type = value;
      else if (field === "data") data.push(value);
    }
    if (!data.length) return;
    const text = data.join("\n");
    let parsed = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    onEvent?.(type, parsed);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    let chunk = carry + decoder.decode(value, { stream: true });
    carry = "";
    if (chunk.endsWith("\r")) {
      carry = "\r";
      chunk = chunk.slice(0, -1);
    }
    buffer += chunk.replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) !== -1) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      dispatch(block);
    }
  }
  buffer += (carry + decoder.decode()).replace(/\r\n?/g, "\n");
  if (buffer.trim()) dispatch(buffer.replace(/\r\n?/g, "\n"));
}

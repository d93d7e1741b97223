// Chat page, what the browser keeps: the conversations (ids sent to the server as the thread id)
// and each conversation's messages with their traces, in localStorage.

const LS_CONVS = "sb.conversations";
const LS_CURRENT = "sb.currentConversation";
const LS_MSGS = (id) => `sb.messages.${id}`;
const MAX_MESSAGES = 60;
const MAX_TRACE = 300;

function load(key, fallback) {
  try {
    const raw = localStorage.getItem(key);
    return raw ? JSON.parse(raw) : fallback;
  } catch {
    return fallback;
  }
}

function save(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch (err) {
    console.warn("localStorage is full or unavailable", err);
  }
}

export function newId() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export const store = {
  conversations: () => load(LS_CONVS, []),
  setConversations: (list) => save(LS_CONVS, list),
  current: () => localStorage.getItem(LS_CURRENT),
  setCurrent: (id) => localStorage.setItem(LS_CURRENT, id),
  messages: (id) => load(LS_MSGS(id), []),
  setMessages: (id, msgs) => save(LS_MSGS(id), msgs.slice(-MAX_MESSAGES)),
  removeMessages: (id) => localStorage.removeItem(LS_MSGS(id)),
};

export function createConversation(title = "新对话") {
  const conv = { id: newId(), title, updatedAt: new Date().toISOString() };
  store.setConversations([conv, ...store.conversations()]);
  store.setCurrent(conv.id);
  return conv;
}

export function currentConversation() {
  const convs = store.conversations();
  const id = store.current();
  return convs.find((c) => c.id === id) || convs[0] || createConversation();
}

export function touchConversation(id, title) {
  const convs = store.conversations();
  const conv = convs.find((c) => c.id === id);
  if (!conv) return;
  conv.updatedAt = new Date().toISOString();
  if (title && (conv.title === "新对话" || !conv.title)) conv.title = title.slice(0, 40);
  store.setConversations([conv, ...convs.filter((c) => c.id !== id)]);
}

// Message objects are persisted per conversation; `persistMessage` rewrites the one with `localId`.
export function persistMessage(msg) {
  const convId = msg.conversationId;
  const msgs = store.messages(convId);
  const idx = msgs.findIndex((m) => m.localId === msg.localId);
  const copy = { ...msg, trace: (msg.trace || []).slice(-MAX_TRACE) };
  if (idx === -1) msgs.push(copy);
  else msgs[idx] = copy;
  store.setMessages(convId, msgs);
}

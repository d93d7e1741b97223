// A small, safe Markdown renderer. The whole source is HTML-escaped FIRST; only the markup this
// module generates itself ends up as tags. Supports headings, paragraphs, fenced code blocks,
// (nested) lists, tables, blockquotes, rules, **bold**, *italic*, `inline code` and
// [links](http(s)://…) — any other link scheme (javascript:, data:, relative) stays plain text.

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ESC[c]);
}

const HOLD = "\u0000";
const FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([\w#+.-]*)\s*$/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const QUOTE = /^\s{0,3}&gt;\s?(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

// Inline markup on already-escaped text.
function inline(text) {
  const held = [];
  const hold = (html) => {
    held.push(html);
    return `${HOLD}${held.length - 1}${HOLD}`;
  };
  let s = text.replace(/`([^`\n]+)`/g, (_, code) => hold(`<code>${code}</code>`));
  s = s.replace(/\[([^\]\n]+)\]\(([^()\s]+)\)/g, (whole, label, url) => {
    if (!/^https?:\/\/[^\s]+$/i.test(url)) return whole;
    return hold(`<a href="${url}" target="_blank" rel="noopener noreferrer">${emphasis(label)}</a>`);
  });
  // Bare http(s) URLs become links too (already escaped, so no quote can break out).
  s = s.replace(/(^|[\s(（])(https?:\/\/(?:(?!&quot;|&#39;|&lt;|&gt;)[^\s<)），。；])+)/g, (_, pre, url) => {
    const m = url.match(/^(.*?)([.,;:!?]*)$/);
    return pre + hold(`<a href="${m[1]}" target="_blank" rel="noopener noreferrer">${m[1]}</a>`) + m[2];
  });
  s = emphasis(s);
  return s.replace(new RegExp(`${HOLD}(\\d+)${HOLD}`, "g"), (_, i) => held[Number(i)]);
}

function emphasis(s) {
  return s
    .replace(/\*\*([^*\n]+?)\*\*/g, "<strong>$1</strong>")
    .replace(/__([^_\n]+?)__/g, "<strong>$1</strong>")
    .replace(/(^|[^*\w])\*([^*\s](?:[^*\n]*?[^*\s])?)\*(?![*\w])/g, "$1<em>$2</em>")
    .replace(/~~([^~\n]+?)~~/g, "<del>$1</del>");
}

function splitRow(row) {
  let r = row.trim().replace(/\\\|/g, HOLD);
  if (r.startsWith("|")) r = r.slice(1);
  if (r.endsWith("|")) r = r.slice(0, -1);
  return r.split("|").map((c) => c.trim().split(HOLD).join("|"));
}

function isBlockStart(line, next) {
  return (
    FENCE.test(line) ||
    HEADING.test(line) ||
    RULE.test(line) ||
    LIST_ITEM.test(line) ||
    QUOTE.test(line) ||
    (line.includes("|") && next !== undefined && TABLE_SEP.test(next) && next.includes("-"))
  );
}

function renderTable(lines, i) {
  const head = splitRow(lines[i]);
  const aligns = splitRow(lines[i + 1]).map((c) =>
    c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : "",
  );
  const cell = (tag, text, k) =>
    // A class, not a style attribute: the Content-Security-Policy allows no inline styles.
    `<${tag}${aligns[k] ? ` class="align-${aligns[k]}"` : ""}>${inline(text)}</${tag}>`;
  let html = `<table><thead><tr>${head.map((c, k) => cell("th", c, k)).join("")}</tr></thead><tbody>`;
  i += 2;
  while (i < lines.length && lines[i].trim() && lines[i].includes("|")) {
    const cells = splitRow(lines[i]);
    html += `<tr>${head.map((_, k) => cell("td", cells[k] ?? "", k)).join("")}</tr>`;
    i += 1;
  }
  return [`${html}</tbody></table>`, i];
}

function renderList(lines, i) {
  const items = [];
  while (i < lines.length) {
    const line = lines[i];
    const m = line.match(LIST_ITEM);
    if (m) {
      items.push({
        indent: m[1].replace(/\t/g, "    ").length,
        ordered: /\d/.test(m[2]),
        text: m[3],
      });
      i += 1;
    } else if (line.trim() && /^\s+/.test(line) && items.length && !FENCE.test(line)) {
      items[items.length - 1].text += ` ${line.trim()}`;
      i += 1;
    } else if (!line.trim() && i + 1 < lines.length && LIST_ITEM.test(lines[i + 1])) {
      i += 1;
    } else {
      break;
    }
  }
  let html = "";
  const stack = [];
  for (const it of items) {
    const tag = it.ordered ? "ol" : "ul";
    const top = stack[stack.length - 1];
    if (!top || it.indent > top.indent + 1) {
      html += `<${tag}>`;
      stack.push({ indent: it.indent, tag });
    } else {
      while (stack.length > 1 && it.indent < stack[stack.length - 1].indent - 1) {
        html += `</li></${stack.pop().tag}>`;
      }
      html += "</li>";
      const cur = stack[stack.length - 1];
      if (cur.tag !== tag) {
        html += `</${cur.tag}><${tag}>`;
        cur.tag = tag;
      }
    }
    html += `<li>${inline(it.text)}`;
  }
  while (stack.length) html += `</li></${stack.pop().tag}>`;
  return [html, i];
}

function renderBlocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m = line.match(FENCE);
    if (m) {
      const fence = m[1];
      const lang = m[2];
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence)) {
        body.push(lines[i]);
        i += 1;
      }
      i += 1; // closing fence (or end of text)
      const cls = lang ? ` class="lang-${lang.replace(/[^\w-]/g, "")}"` : "";
      out.push(`<pre><code${cls}>${body.join("\n")}</code></pre>`);
      continue;
    }
    if (!line.trim()) {
      i += 1;
      continue;
    }
    m = line.match(HEADING);
    if (m) {
      const level = m[1].length;
      out.push(`<h${level}>${inline(m[2])}</h${level}>`);
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      out.push("<hr>");
      i += 1;
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      const [html, next] = renderTable(lines, i);
      out.push(html);
      i = next;
      continue;
    }
    if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && (m = lines[i].match(QUOTE))) {
        inner.push(m[1]);
        i += 1;
      }
      out.push(`<blockquote>${renderBlocks(inner)}</blockquote>`);
      continue;
    }
    if (LIST_ITEM.test(line)) {
      const [html, next] = renderList(lines, i);
      out.push(html);
      i = next;
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && (para.length === 0 || !isBlockStart(lines[i], lines[i + 1]))) {
      para.push(inline(lines[i].trim()));
      i += 1;
    }
    out.push(`<p>${para.join("<br>")}</p>`);
  }
  return out.join("\n");
}

/** Markdown source → safe HTML string. */
export function renderMarkdown(source) {
  const text = String(source ?? "").split(HOLD).join("").replace(/\r\n?/g, "\n");
  return renderBlocks(escapeHtml(text).split("\n"));
}

/** Render into an element (the only place this module's HTML reaches the DOM). */
export function setMarkdown(element, source) {
  element.innerHTML = renderMarkdown(source);
  element.classList.add("md");
  return element;
}

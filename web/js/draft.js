// "Draft a runbook" from the knowledge-gap report: the insights page leaves the draft in
// sessionStorage and opens /documents#draft; here it opens in the upload form as the file to
// upload, editable in a text area (each edit replaces the file).

export const DRAFT_KEY = "superbiz:runbook-draft";

function setFile(input, name, text) {
  const dt = new DataTransfer();
  dt.items.add(new File([text], name, { type: "text/markdown" }));
  input.files = dt.files;
}

export function openDraft(openUpload) {
  const raw = sessionStorage.getItem(DRAFT_KEY);
  if (!raw) return false;
  sessionStorage.removeItem(DRAFT_KEY);
  let d;
  try {
    d = JSON.parse(raw);
  } catch {
    return false;
  }
  const field = document.getElementById("upload-draft-field");
  const area = document.getElementById("upload-draft");
  const file = document.getElementById("upload-file");
  const category = document.getElementById("upload-category");
  openUpload();
  field.hidden = false;
  area.value = d.markdown || "";
  setFile(file, d.fileName || "new-runbook.md", area.value);
  if (d.category && !category.value) category.value = d.category;
  area.addEventListener("input", () => setFile(file, d.fileName || "new-runbook.md", area.value));
  (d.category ? area : category).focus();
  return true;
}

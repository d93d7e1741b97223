// Documents page: the list (doc_list.js), one document's actions (doc_actions.js) and detail
// (doc_detail.js), the upload form (doc_upload.js), the knowledge-base re-import (doc_reimport.js).
// The seed's document fields (fault source, API name, version, chunking) are in doc_meta.js.

import { initShell, refreshHealth } from "./ui.js";
import { docActions } from "./doc_actions.js";
import { closeDetail, docDetail } from "./doc_detail.js";
import { docList } from "./doc_list.js";
import { initReimport, openReimport } from "./doc_reimport.js";
import { initUpload, openUpload } from "./doc_upload.js";
import { openDraft } from "./draft.js";

const actions = docActions({ refresh: refreshAll, onDeleted: closeDetail });
const list = docList({ actions, openDetail: docDetail(actions), openUpload, openReimport });

function refreshAll() {
  return Promise.all([list.loadStats(), list.loadDocuments({ quiet: true }), refreshHealth()]);
}

initUpload({
  afterUpload: () => {
    list.state.page = 1;
    return refreshAll();
  },
});
initReimport({ afterImport: refreshAll });
document.getElementById("upload-open").addEventListener("click", openUpload);
document.getElementById("reimport-open").addEventListener("click", openReimport);
document.getElementById("doc-refresh").addEventListener("click", () => refreshAll());

initShell();
window.addEventListener("superbiz:started", () => refreshAll()); // the server finished starting
list.start();
openDraft(openUpload); // a runbook drafted from the knowledge-gap report (insights page)

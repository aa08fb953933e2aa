// Small progressive enhancements; every page works without them.
// - <button data-copy="#id"> copies the text of #id to the clipboard (values shown once);
//   <button data-copy-value="…"> copies its value (a shortened path, key or id, whole).
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var btn = event.target && event.target.closest ? event.target.closest("button[data-copy], button[data-copy-value]") : null;
    if (!btn || !navigator.clipboard) { return; }
    var text = btn.getAttribute("data-copy-value");
    if (text === null) {
      var source = document.querySelector(btn.getAttribute("data-copy"));
      if (!source) { return; }
      text = source.textContent.trim();
    }
    navigator.clipboard.writeText(text).then(function () {
      if (btn.hasAttribute("data-copy-value")) {
        btn.classList.add("copied");
        setTimeout(function () { btn.classList.remove("copied"); }, 1500);
        return;
      }
      var label = btn.textContent;
      btn.textContent = "Copied";
      setTimeout(function () { btn.textContent = label; }, 1500);
    });
  });
})();
// A server-rendered <dialog data-modal> opens as a modal once htmx has swapped it in.
document.addEventListener("htmx:load", function (event) {
  var root = event.target;
  if (!root || !root.querySelectorAll) { return; }
  var dialogs = root.matches && root.matches("dialog[data-modal]") ? [root] : root.querySelectorAll("dialog[data-modal]");
  Array.prototype.forEach.call(dialogs, function (d) {
    if (!d.open && d.showModal) { d.showModal(); }
    d.addEventListener("close", function () { d.remove(); });
  });
});
// Cancel inside a modal closes it (without JavaScript it is a link back to the list).
document.addEventListener("click", function (event) {
  var el = event.target && event.target.closest ? event.target.closest("[data-close-dialog]") : null;
  var dialog = el ? el.closest("dialog") : null;
  if (dialog) { event.preventDefault(); dialog.close(); }
});
// The connection dialog redraws whole after "Test this host" or a refused save. A pasted token
// is never sent back by the server (no token reaches a browser in a response), so what was typed
// is carried over here; then the focus goes where the answer is.
(function () {
  "use strict";
  var redrawing = false;
  var pasted = "";
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || target.id !== "connection-form") { return; }
    var key = document.getElementById("connection-new-key");
    redrawing = true;
    pasted = key ? key.value : "";
  });
  document.addEventListener("htmx:afterSwap", function () {
    if (!redrawing) { return; }
    redrawing = false;
    var form = document.getElementById("connection-form");
    var key = document.getElementById("connection-new-key");
    if (key && pasted && !key.value) { key.value = pasted; }
    pasted = "";
    if (!form) { return; }
    // The first message's field, else (a test that passed) the button that was pressed, so the
    // outcome above it is in view.
    var invalid = form.querySelector("[aria-invalid='true']");
    var next = invalid || (form.querySelector("#probe-result") ? form.querySelector("#probe-button") : null);
    if (next) { next.focus(); }
  });
})();
// On a small screen a table shows as stacked cards (app.css): each cell is labelled with its
// column's heading, copied here into data-label. Without this the cells still stack, unlabelled.
(function () {
  "use strict";
  function label(table) {
    var heads = table.querySelectorAll("thead th");
    if (!heads.length) { return; }
    var names = Array.prototype.map.call(heads, function (th) { return th.textContent.trim(); });
    Array.prototype.forEach.call(table.querySelectorAll("tbody tr"), function (tr) {
      Array.prototype.forEach.call(tr.children, function (td, i) {
        if (td.tagName !== "TD" || td.colSpan > 1 || td.hasAttribute("data-label")) { return; }
        if (td.classList.contains("actions") || !names[i] || names[i] === "Actions") { return; }
        td.setAttribute("data-label", names[i]);
      });
    });
  }
  function labelWithin(root) {
    if (!root || !root.querySelectorAll) { return; }
    var own = root.closest ? root.closest("table.table") : null;
    if (own) { label(own); }
    Array.prototype.forEach.call(root.querySelectorAll("table.table"), label);
  }
  labelWithin(document);
  document.addEventListener("htmx:load", function (event) { labelWithin(event.target); });
})();
// A discovered sandboxd container's "Use http://127.0.0.1:…" fills the dialog's address field
// (without JavaScript it is a link to the dialog with that address filled in).
document.addEventListener("click", function (event) {
  var el = event.target && event.target.closest ? event.target.closest("[data-fill-address]") : null;
  if (!el) { return; }
  var field = document.getElementById("connection-address");
  if (!field) { return; }
  event.preventDefault();
  field.value = el.getAttribute("data-fill-address");
  field.dispatchEvent(new Event("input", { bubbles: true }));
  field.focus();
});
// Activity's time range: typing a From or To time makes the range custom (without JavaScript a
// typed time with a preset chosen is replaced by the preset, as the page says).
document.addEventListener("input", function (event) {
  var el = event.target;
  if (!el || (el.id !== "oplog-since" && el.id !== "oplog-until")) { return; }
  var range = document.getElementById("oplog-range");
  if (range) { range.value = "custom"; }
}, true);
// Documents: a file opened from a workspace's tree is swapped into the preview pane (beside the
// tree, where it stays in view; a sheet on a phone); the tree marks it, and the focus goes to the
// pane so the keyboard is where the file is. Closing it returns the focus to the file's link.
(function () {
  "use strict";
  var closing = "";
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || target.id !== "workspace-preview") { return; }
    var shown = target.querySelector("#preview-path");
    closing = shown ? shown.textContent : "";
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    var pane = event.target;
    if (!pane || pane.id !== "workspace-preview") { return; }
    var shown = pane.querySelector("#preview-path");
    var path = shown ? shown.textContent : "";
    var back = null;
    Array.prototype.forEach.call(document.querySelectorAll("#workspace-tree a.tree-open"), function (a) {
      var li = a.closest("li");
      var at = li ? li.getAttribute("data-path") : null;
      if (path && at === path) { a.setAttribute("aria-current", "true"); }
      else { a.removeAttribute("aria-current"); }
      if (!path && closing && at === closing) { back = a; }
    });
    closing = "";
    if (back) { back.focus(); return; }
    pane.focus({ preventScroll: true });
    var top = pane.getBoundingClientRect().top;
    if (window.innerWidth > 768 && (top < 0 || top > window.innerHeight)) { pane.scrollIntoView({ block: "start" }); }
  });
})();
// A conversation's "Add files": each file dropped or chosen is sent on its own (its bytes as the
// body, the CSRF token in a header) with a progress bar; the server's line replaces the bar. A
// file over the limit is refused here without sending (the server refuses it too).
(function () {
  "use strict";
  function line(list, name) {
    var li = document.createElement("li");
    li.className = "upload-line upload-sending";
    li.setAttribute("data-name", name);
    var label = document.createElement("span");
    label.className = "upload-name";
    label.textContent = name;
    var bar = document.createElement("progress");
    bar.max = 100;
    bar.value = 0;
    bar.setAttribute("aria-label", "Sending " + name);
    li.appendChild(label);
    li.appendChild(document.createTextNode(" "));
    li.appendChild(bar);
    list.appendChild(li);
    return li;
  }
  function refuse(li, message) {
    li.className = "upload-line upload-error";
    li.textContent = "";
    var badge = document.createElement("span");
    badge.className = "badge badge-red";
    badge.textContent = "not attached";
    var text = document.createElement("span");
    text.className = "upload-message";
    text.setAttribute("role", "alert");
    text.textContent = message;
    li.appendChild(badge);
    li.appendChild(document.createTextNode(" " + li.getAttribute("data-name") + ": "));
    li.appendChild(text);
  }
  function send(zone, file) {
    var list = document.getElementById("attach-list");
    var li = line(list, file.name);
    var max = parseInt(zone.getAttribute("data-max-bytes"), 10);
    if (file.size > max) {
      refuse(li, file.name + " is larger than " + Math.floor(max / 1048576) + " MiB, the most one file may be.");
      return;
    }
    var xhr = new XMLHttpRequest();
    xhr.open("POST", zone.getAttribute("data-upload") + "?name=" + encodeURIComponent(file.name));
    xhr.setRequestHeader("Content-Type", "application/octet-stream");
    xhr.setRequestHeader("X-CSRF-Token", zone.getAttribute("data-csrf"));
    xhr.upload.addEventListener("progress", function (e) {
      var bar = li.querySelector("progress");
      if (bar && e.lengthComputable) { bar.value = Math.round(100 * e.loaded / e.total); }
    });
    xhr.addEventListener("load", function () {
      var doc = new DOMParser().parseFromString(xhr.responseText, "text/html");
      var answer = doc.querySelector("li.upload-line");
      if (answer) { list.replaceChild(document.importNode(answer, true), li); return; }
      // An error page (a refusal before the upload's own checks): its first paragraph says why.
      var why = doc.querySelector("main h1 + p");
      refuse(li, why ? why.textContent.trim() : "The console refused the file (" + xhr.status + ").");
    });
    xhr.addEventListener("error", function () { refuse(li, "The file could not be sent: the connection failed."); });
    xhr.send(file);
  }
  function sendAll(zone, files) {
    Array.prototype.forEach.call(files, function (f) { send(zone, f); });
  }
  document.addEventListener("change", function (event) {
    var input = event.target;
    if (!input || input.id !== "attach-input") { return; }
    var zone = document.getElementById("attach-drop");
    if (zone && input.files) { sendAll(zone, input.files); }
    input.value = "";
  });
  ["dragenter", "dragover"].forEach(function (type) {
    document.addEventListener(type, function (event) {
      var zone = event.target && event.target.closest ? event.target.closest("#attach-drop") : null;
      if (!zone) { return; }
      event.preventDefault();
      zone.classList.add("dropzone-over");
    });
  });
  document.addEventListener("dragleave", function (event) {
    var zone = event.target && event.target.closest ? event.target.closest("#attach-drop") : null;
    if (zone) { zone.classList.remove("dropzone-over"); }
  });
  document.addEventListener("drop", function (event) {
    var zone = event.target && event.target.closest ? event.target.closest("#attach-drop") : null;
    if (!zone) { return; }
    event.preventDefault();
    zone.classList.remove("dropzone-over");
    if (event.dataTransfer && event.dataTransfer.files) { sendAll(zone, event.dataTransfer.files); }
  });
})();
// The phone's Menu: a real button (aria-expanded) takes over from the checkbox and its label,
// which stay the way in without script; Escape folds the navigation again and returns to it.
(function () {
  "use strict";
  function enhance() {
    var button = document.getElementById("menu-button");
    var toggle = document.getElementById("nav-toggle");
    if (!button || !toggle || !button.hidden) { return; }
    var label = document.querySelector("label.menu-button[for='nav-toggle']");
    if (label) { label.hidden = true; }
    toggle.hidden = true;
    toggle.checked = false;
    button.hidden = false;
    button.setAttribute("aria-expanded", "false");
  }
  function set(open) {
    var button = document.getElementById("menu-button");
    var toggle = document.getElementById("nav-toggle");
    if (!button || !toggle) { return; }
    toggle.checked = open;
    button.setAttribute("aria-expanded", open ? "true" : "false");
  }
  document.addEventListener("click", function (event) {
    var el = event.target && event.target.closest ? event.target.closest("#menu-button") : null;
    if (el) { set(el.getAttribute("aria-expanded") !== "true"); }
  });
  document.addEventListener("keydown", function (event) {
    var button = document.getElementById("menu-button");
    if (event.key !== "Escape" || !button || button.getAttribute("aria-expanded") !== "true") { return; }
    var nav = document.getElementById("sidebar-nav");
    if (nav && nav.contains(document.activeElement)) { button.focus(); }
    set(false);
  });
  enhance();
  document.addEventListener("htmx:load", enhance);
})();

// Small progressive enhancements; every page works without them.
// - <select data-autosubmit> submits its form on change (the organization switcher).
// - <button data-copy="#id"> copies the text of #id to the clipboard (values shown once).
(function () {
  "use strict";
  document.addEventListener("change", function (event) {
    var el = event.target;
    if (el && el.matches && el.matches("select[data-autosubmit]") && el.form) {
      if (el.form.requestSubmit) { el.form.requestSubmit(); } else { el.form.submit(); }
    }
  });
  document.addEventListener("click", function (event) {
    var btn = event.target && event.target.closest ? event.target.closest("button[data-copy]") : null;
    if (!btn) { return; }
    var source = document.querySelector(btn.getAttribute("data-copy"));
    if (!source || !navigator.clipboard) { return; }
    navigator.clipboard.writeText(source.textContent.trim()).then(function () {
      var label = btn.textContent;
      btn.textContent = "Copied";
      setTimeout(function () { btn.textContent = label; }, 1500);
    });
  });
})();

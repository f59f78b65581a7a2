// The editor works without JavaScript; this only adds conveniences:
// clicking "line N" beside a YAML error puts the cursor on that line.
(function () {
  "use strict";
  const textarea = document.querySelector(".yaml-text textarea");
  if (!textarea) return;
  document.querySelectorAll(".yaml-errors a.line").forEach(function (link) {
    link.addEventListener("click", function (event) {
      event.preventDefault();
      const line = parseInt(link.dataset.line, 10);
      const lines = textarea.value.split("\n");
      let start = 0;
      for (let i = 0; i < line - 1 && i < lines.length; i++) start += lines[i].length + 1;
      const end = start + (lines[line - 1] || "").length;
      textarea.focus();
      textarea.setSelectionRange(start, end);
      const lineHeight = textarea.scrollHeight / Math.max(lines.length, 1);
      textarea.scrollTop = Math.max(0, (line - 5) * lineHeight);
    });
  });
})();

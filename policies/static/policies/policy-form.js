// The policy form shows only the chosen mode's fields. Each group says which modes read it
// (data-modes); this hides the others as the mode changes. Without the script every group shows,
// and the server reads only the chosen mode's fields anyway.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var select = document.querySelector(".policy-form select[name=mode]");
    if (!select) { return; }
    function show() {
      document.querySelectorAll(".policy-form .mode-fields").forEach(function (group) {
        var modes = (group.getAttribute("data-modes") || "").split(" ");
        group.hidden = modes.indexOf(select.value) === -1;
      });
    }
    select.addEventListener("change", show);
    show();
  });
})();

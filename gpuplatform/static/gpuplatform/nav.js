// The navigation folds behind a Menu button at phone width (app.css). The button is a real <button>
// (keyboard and touch work natively) that says whether the menu is open (aria-expanded); Escape
// closes it and gives focus back to the button. Without this script the menu stays unfolded.
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  document.addEventListener("DOMContentLoaded", function () {
    var button = document.querySelector(".nav-toggle");
    var nav = document.getElementById("site-nav");
    if (!button || !nav) { return; }
    function set(open) {
      nav.classList.toggle("open", open);
      button.setAttribute("aria-expanded", open ? "true" : "false");
    }
    button.addEventListener("click", function () { set(!nav.classList.contains("open")); });
    nav.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && nav.classList.contains("open")) { set(false); button.focus(); }
    });
  });
})();

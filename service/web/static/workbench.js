// The grading page's keyboard: number keys mark criterion N (its first choice, the harmless
// one: met, or for an error absent; a second press the other) or choose rating N; Enter
// submits; Ctrl+Enter (Cmd+Enter on a Mac) submits from a text box. Every key
// goes through the page's own radio buttons, so what is sent is what the page shows, and
// the change event autosaves the marks as a click would.
(function () {
  "use strict";

  function typing(target) {
    return target && (target.tagName === "TEXTAREA" ||
      (target.tagName === "INPUT" && target.type === "text"));
  }

  function choose(input) {
    input.checked = true;
    input.focus();
    input.dispatchEvent(new Event("change", { bubbles: true }));
  }

  function markCriterion(form, number) {
    var set = form.querySelector('fieldset[data-key="' + number + '"]');
    if (!set) return;
    var choices = set.querySelectorAll('input[type="radio"]');
    choose(choices[0].checked ? choices[1] : choices[0]);
  }

  function chooseRating(form, number) {
    var sets = form.querySelectorAll("fieldset[data-dimension]");
    var target = null;
    var focused = document.activeElement && document.activeElement.closest("fieldset[data-dimension]");
    if (focused) target = focused;
    for (var i = 0; !target && i < sets.length; i++) {
      if (!sets[i].querySelector("input:checked")) target = sets[i];
    }
    target = target || sets[0];
    var input = target && target.querySelector('input[value="' + number + '"]');
    if (input) choose(input);
  }

  document.addEventListener("keydown", function (event) {
    var form = document.getElementById("label-form");
    if (!form || event.altKey) return;
    var modified = event.ctrlKey || event.metaKey;
    if (event.key === "Enter") {
      var here = event.target === document.body || form.contains(event.target);
      if (!here || event.target.tagName === "BUTTON") return; // other forms keep their Enter
      if (typing(event.target) && !modified) return; // a new line in the reasoning
      event.preventDefault();
      form.requestSubmit();
      return;
    }
    if (modified || typing(event.target) || !/^[1-9]$/.test(event.key)) return;
    event.preventDefault();
    if (form.dataset.kind === "criteria") markCriterion(form, event.key);
    else chooseRating(form, event.key);
  });
})();

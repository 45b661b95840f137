// The review page's keys (listed on the page): the form works without them, they only
// choose its fields and submit it. No request of its own: the form posts as it is.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("review");
  if (!form) return;
  const rows = Array.from(form.querySelectorAll("tr.opinion"));
  const note = document.getElementById("note");
  let current = -1;

  function choose(index) {
    if (!rows.length) return;
    current = Math.max(0, Math.min(rows.length - 1, index));
    rows.forEach((row, at) => row.classList.toggle("current", at === current));
    form.querySelectorAll("mark.opinion").forEach((mark) =>
      mark.classList.toggle("current", Number(mark.dataset.index) === current));
    rows[current].scrollIntoView({ block: "nearest" });
  }

  function label(kind) {  // "agree", "disagree" or "" (clear) on the current opinion
    if (current < 0) choose(0);
    if (current < 0) return;
    const name = `opinion-${rows[current].dataset.index}`;
    const wanted = kind === "agree" ? ".agree" : kind === "disagree" ? ".disagree" : '[value=""]';
    form.querySelector(`input[name="${name}"]${wanted}`).checked = true;
  }

  form.addEventListener("change", () => {
    if (form.querySelector('input[name="label"]:checked')) {
      form.querySelector("#record-label").classList.remove("error");
    }
  });

  function pick(id) {  // a radio set by key tells the form, as a click would
    const input = document.getElementById(id);
    input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
  }

  function submit() {
    if (!form.querySelector('input[name="label"]:checked')) {
      form.querySelector("#record-label").classList.add("error");
      document.getElementById("label-agree").focus();
      return;
    }
    form.requestSubmit();
  }

  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.metaKey) return;
    if (event.target === note) {
      if (event.key === "Escape") note.blur();
      else if (event.key === "Enter" && event.ctrlKey) { event.preventDefault(); submit(); }
      return;
    }
    const field = event.target;  // typing into another field (an admin's key filter)
    if (field.tagName === "TEXTAREA" || (field.tagName === "INPUT" && field.type === "text")) return;
    if (event.ctrlKey && event.key !== "Enter") return;
    const actions = {
      y: () => pick("label-agree"),
      n: () => pick("label-disagree"),
      j: () => choose(current + 1),
      ArrowDown: () => choose(current + 1),
      k: () => choose(current - 1),
      ArrowUp: () => choose(current - 1),
      a: () => label("agree"),
      d: () => label("disagree"),
      c: () => label(""),
      e: () => note.focus(),
      s: () => document.getElementById("skip").click(),
      Enter: submit,
    };
    let action = actions[event.key];
    if (!action && /^[1-9]$/.test(event.key) && Number(event.key) <= rows.length) {
      action = () => choose(Number(event.key) - 1);
    }
    if (action) {
      event.preventDefault();
      action();
    }
  });
});

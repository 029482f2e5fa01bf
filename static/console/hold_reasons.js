// The reason list offers only the reasons that fit the chosen decision: each decision's reasons are one group
// ("Release because", "Reject because"); the others are disabled. The ledger refuses any other pairing anyway.
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("select[name=reason]").forEach((reasons) => {
    const decisions = reasons.form.querySelectorAll("input[name=decision]");
    const fit = () => {
      const chosen = Array.from(decisions).find((box) => box.checked);
      reasons.querySelectorAll("optgroup").forEach((group) => {
        const fits = !chosen || group.label.toLowerCase().startsWith(chosen.value);
        group.disabled = !fits;
        group.hidden = !fits;
      });
      const selected = reasons.selectedOptions[0];
      if (selected && selected.parentElement.disabled) {
        const first = reasons.querySelector("optgroup:not([disabled]) option");
        if (first) first.selected = true;
      }
    };
    decisions.forEach((box) => box.addEventListener("change", fit));
    fit();
  });
});

// A "select all" box ticks or clears every box named by its data-controls attribute in the same form.
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("input[data-select-all]").forEach((master) => {
    const boxes = () => master.form.querySelectorAll(`input[type=checkbox][name="${master.dataset.selectAll}"]`);
    master.addEventListener("change", () => boxes().forEach((box) => { box.checked = master.checked; }));
    master.form.addEventListener("change", (event) => {
      if (event.target === master) return;
      const all = Array.from(boxes());
      master.checked = all.length > 0 && all.every((box) => box.checked);
      master.indeterminate = !master.checked && all.some((box) => box.checked);
    });
  });
});

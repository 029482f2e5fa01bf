// Fields that apply to some account kinds only (data-for-kinds) are shown, and sent, for those kinds alone: a
// hidden field is disabled, so what it held is not submitted. The server checks the same rule either way.
document.addEventListener("DOMContentLoaded", () => {
  const kind = document.querySelector("select[name=kind]");
  if (!kind) return;
  const follow = () => document.querySelectorAll("[data-for-kinds]").forEach((input) => {
    const applies = input.dataset.forKinds.split(" ").includes(kind.value);
    input.closest(".form-row").hidden = !applies;
    input.disabled = !applies;
  });
  kind.addEventListener("change", follow);
  follow();
});

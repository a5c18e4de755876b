// The two questions the page asks: the token (when a request needs it) and "are you sure?" before an action.

let pending = null;

/** Ask for the token; resolves with it, or null when the operator cancels. One question at a time. */
export function askToken(why) {
  if (pending) return pending;
  const dialog = document.getElementById("token-dialog");
  const input = document.getElementById("token-input");
  document.getElementById("token-why").textContent = why;
  input.value = "";
  pending = new Promise((resolve) => {
    const done = (value) => {
      dialog.removeEventListener("close", onClose);
      pending = null;
      resolve(value);
    };
    const onClose = () => done(dialog.returnValue === "ok" && input.value.trim() ? input.value.trim() : null);
    dialog.addEventListener("close", onClose);
    document.getElementById("token-cancel").onclick = () => dialog.close("cancel");
    dialog.returnValue = "";
    dialog.showModal();
    input.focus();
  });
  return pending;
}

/** Resolves true when the operator confirms `text` with `action`. */
export function confirmAction(title, text, action) {
  const dialog = document.getElementById("confirm-dialog");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-yes").textContent = action;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "yes"), { once: true });
    dialog.returnValue = "";
    dialog.showModal();
  });
}

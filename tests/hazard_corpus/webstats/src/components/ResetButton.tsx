export function ResetButton() {
  return <button aria-label="Reset website">{"Reset"}</button>; // safe: UI label
}
export const confirm = "Discard all changes?"; // safe: UI text

export const shortcuts = [
  { label: "Begin editing", key: "e" }, // safe: UI label
  { label: "Load more", key: "l" }, // safe: UI label
  { label: "Listen to changes", key: "w" }, // safe: UI label
];

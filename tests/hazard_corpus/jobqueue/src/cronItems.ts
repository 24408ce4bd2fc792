export const helpText = `
Set up crontab entries, one per line.
Reset the schedule with --clean.
`; // safe: help text
export function describe(task: string) {
  return "Execute " + task + " every minute"; // safe: message built by concatenation
}

// Readiness marks: User Timing marks that say when a page became usable,
// written only while the Hub's profiling.readiness_marks setting is on (read
// once per full page load from the shell's initial data). Off, nothing here
// calls performance.mark at all.
//
// Each mark is written at most once per load, with only {view} as detail. A
// load ends on a client-side navigation, a change of scope or a project
// filter change on the standalone graph: the marks are cleared then, and a
// mark waiting for the next frame is dropped, so it never lands in the next
// load. Switching views inside one load does not end it.

export const MARKS = Object.freeze({
  agentsData: 'scion:ready:agents-data',
  rowsGrid: 'scion:ready:rows-grid',
  rowsList: 'scion:ready:rows-list',
  graph: 'scion:ready:graph',
});

export class ReadinessMarks {
  constructor(enabled) {
    this.enabled = enabled === true;
    this.load = 0;
    this.written = new Set();
  }

  /** Writes `name` now, unless this load has written it already. */
  mark(name, view) {
    if (!this.enabled || this.written.has(name)) return;
    this.written.add(name);
    performance.mark(name, { detail: { view } });
  }

  /** Writes `name` in the next frame, if the load has not ended by then. */
  markNextFrame(name, view) {
    if (!this.enabled || this.written.has(name)) return;
    const load = this.load;
    requestAnimationFrame(() => {
      if (load === this.load) this.mark(name, view);
    });
  }

  /** Ends the current load: its marks are cleared and pending ones dropped. */
  endLoad() {
    this.load += 1;
    if (!this.enabled) return;
    for (const name of this.written) performance.clearMarks(name);
    this.written.clear();
  }
}

// Progress of a long import: a redrawn bar on a terminal, plain lines in a log or a pipe.

export interface Progress {
  start(label: string, total: number): void
  advance(count: number): void
  finish(): void
}

type Output = NodeJS.WritableStream & { isTTY?: boolean; columns?: number }

export const silentProgress: Progress = { start() {}, advance() {}, finish() {} }

export function progressOn(out: Output, now: () => number = Date.now): Progress {
  return out.isTTY ? new Bar(out, now) : new Lines(out, now)
}

abstract class Phase implements Progress {
  protected label = ''
  protected total = 0
  protected done = 0
  protected startedAt = 0
  protected lastDrawn = 0

  constructor(
    protected readonly out: Output,
    protected readonly now: () => number,
  ) {}

  start(label: string, total: number): void {
    this.label = label
    this.total = total
    this.done = 0
    this.startedAt = this.now()
    this.lastDrawn = 0
    if (total > 0) this.draw(false)
  }

  advance(count: number): void {
    this.done = Math.min(this.total, this.done + count)
    if (this.total > 0 && this.now() - this.lastDrawn >= this.interval) this.draw(false)
  }

  /** A phase with nothing to do leaves no line. */
  finish(): void {
    this.done = this.total
    if (this.total > 0) this.draw(true)
  }

  protected rate(): string {
    const seconds = (this.now() - this.startedAt) / 1000
    return seconds > 0 ? `${Math.round(this.done / seconds)}/s` : ''
  }

  protected abstract readonly interval: number
  protected abstract draw(final: boolean): void
}

class Bar extends Phase {
  protected readonly interval = 100

  protected draw(final: boolean): void {
    this.lastDrawn = this.now()
    const fraction = this.total === 0 ? 1 : this.done / this.total
    const width = Math.max(10, Math.min(40, (this.out.columns ?? 80) - 60))
    const filled = Math.round(fraction * width)
    const bar = `${'#'.repeat(filled)}${'-'.repeat(width - filled)}`
    const line = `${this.label.padEnd(22)} [${bar}] ${String(Math.round(fraction * 100)).padStart(3)}% ${this.done}/${this.total} ${this.rate()}`
    this.out.write(`\r\x1b[2K${line}${final ? '\n' : ''}`)
  }
}

class Lines extends Phase {
  protected readonly interval = 2000

  protected draw(final: boolean): void {
    const first = this.lastDrawn === 0
    this.lastDrawn = this.now()
    if (final) {
      const seconds = ((this.now() - this.startedAt) / 1000).toFixed(1)
      this.out.write(`import: ${this.label}: ${this.total}/${this.total} done in ${seconds} s ${this.rate()}\n`)
    } else if (first) {
      this.out.write(`import: ${this.label}: 0/${this.total}\n`)
    } else {
      this.out.write(`import: ${this.label}: ${this.done}/${this.total} ${this.rate()}\n`)
    }
  }
}

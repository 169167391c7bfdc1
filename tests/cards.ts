// Temporary cards for the tests that need a small or full disk: a tmpfs of a given size, or an ext4 image
// on a loop device. Needs root (the integration tier runs as root). Removing a card is a checked step:
// umount is retried while the card is busy until a deadline, then the test fails naming the mount and the
// processes holding it; the loop device must be gone (waited for within the same deadline) and the mount
// point no longer mounted before its directory is deleted. The per-file leak check
// (tests/per-file.preload.ts) fails a file that leaves one.
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from './helpers'
import { holders, mountsUnder } from './leaks'

export interface Card {
  /** The mount point: the card's root. */
  dir: string
  /** Remounts it read-only or read-write (mount's exit status checked). */
  remount(mode: 'ro' | 'rw'): void
  /** Unmounts (retrying while busy, up to `timeoutMs`) and deletes it; fails saying what holds it. */
  remove(timeoutMs?: number): Promise<void>
}

function run(cmd: string[], why: string): string {
  const r = Bun.spawnSync(cmd, { stdout: 'pipe', stderr: 'pipe' })
  if (r.exitCode !== 0) throw new Error(`${cmd.join(' ')} failed (exit ${r.exitCode}${why}): ${r.stderr.toString().trim()}`)
  return r.stdout.toString()
}

const mounted = (dir: string) => mountsUnder(dir).some((m) => m.path === dir)

function card(work: string, dir: string, image: string | null): Card {
  return {
    dir,
    remount(mode) {
      run(['mount', '-o', `remount,${mode}`, dir], '')
    },
    async remove(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      let last = ''
      while (mounted(dir)) {
        const r = Bun.spawnSync(['umount', dir], { stdout: 'pipe', stderr: 'pipe' })
        if (r.exitCode === 0 && !mounted(dir)) break
        last = r.stderr.toString().trim()
        if (Date.now() > deadline) {
          const held = holders(dir)
          throw new Error(`the card ${dir} is still mounted after ${timeoutMs / 1000} s of umount (${last || `exit ${r.exitCode}`}); held by: ${held.length ? held.join('; ') : 'no process (a mount under it, or the kernel)'}`)
        }
        await Bun.sleep(100)
      }
      if (image) {
        // umount detaches the loop device at its last close, which can come a moment later: a udevd's
        // worker (another suite's NetworkManager lab runs one, and it hears this machine's block
        // devices too) opens each new or changed one for blkid. Waited for, within the same deadline.
        let loops = run(['losetup', '-j', image], '').trim()
        while (loops && Date.now() <= deadline) {
          await Bun.sleep(100)
          loops = run(['losetup', '-j', image], '').trim()
        }
        if (loops) {
          const held = holders(loops.split(':')[0]!)
          throw new Error(`the card's loop device is still attached ${timeoutMs / 1000} s after umount: ${loops}; held open by: ${held.length ? held.join('; ') : 'no process'}`)
        }
      }
      rmSync(work, { recursive: true, force: true })
    },
  }
}

/** A tmpfs of `size` (mount's size=, e.g. "4m", "400k") in a new temporary directory. */
export function tmpfsCard(size: string, prefix = 'periscope-card-'): Card {
  const work = tempDir(prefix)
  const dir = join(work, 'card')
  mkdirSync(dir)
  try {
    run(['mount', '-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], ': a card needs root to mount a tmpfs')
  } catch (e) {
    rmSync(work, { recursive: true, force: true })
    throw e
  }
  return card(work, dir, null)
}

/**
 * An ext4 file system of `megabytes` on a loop device (mount -o loop: umount detaches it), with no blocks
 * reserved for root, so its free space is what any writer gets.
 */
export function loopCard(megabytes: number, prefix = 'periscope-card-'): Card {
  const work = tempDir(prefix)
  const dir = join(work, 'card')
  const image = join(work, 'card.img')
  mkdirSync(dir)
  try {
    run(['truncate', '-s', `${megabytes}M`, image], '')
    run(['mkfs.ext4', '-q', '-F', '-m', '0', image], '')
    run(['mount', '-o', 'loop', image, dir], ': a card needs root for a loop mount')
  } catch (e) {
    rmSync(work, { recursive: true, force: true })
    throw e
  }
  return card(work, dir, image)
}

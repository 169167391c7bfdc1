// The console's shell and entry point: navigation between the pages (one file each in pages/, chosen
// by the URL's hash so any page can be bookmarked and the service needs no route per page), the theme,
// the previews switch, the banners (the service unreachable, a stream's health alert), the token prompt, and the notices.
import { render, type FunctionComponent } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import { reachable, tokenPrompt } from './api'
import { devices, followDevices } from './devices'
import { connectEvents } from './events'
import { CamerasPage } from './pages/cameras'
import { NetworkPage } from './pages/network'
import { PilotPage } from './pages/pilot'
import { PreferencesPage } from './pages/preferences'
import { PreviewsSwitch } from './preview'
import { RecordingsPage } from './pages/recordings'
import { StatusPage } from './pages/status'
import { useValue } from './state'
import './style.css'
import { Notices } from './widgets'

interface Page {
  path: string
  title: string
  component: FunctionComponent
}

export const PAGES: Page[] = [
  { path: 'cameras', title: 'Cameras', component: CamerasPage },
  { path: 'pilot', title: 'Pilot view', component: PilotPage },
  { path: 'recordings', title: 'Recordings', component: RecordingsPage },
  { path: 'network', title: 'Network', component: NetworkPage },
  { path: 'preferences', title: 'Preferences', component: PreferencesPage },
  { path: 'status', title: 'Status', component: StatusPage },
]

const pageFromHash = (): Page => PAGES.find((p) => location.hash === `#/${p.path}`) ?? PAGES[0]!

function useHashPage(): Page {
  const [page, setPage] = useState(pageFromHash)
  useEffect(() => {
    const follow = () => setPage(pageFromHash())
    addEventListener('hashchange', follow)
    return () => removeEventListener('hashchange', follow)
  }, [])
  return page
}

// ---- theme ----

type Theme = 'dark' | 'light'
const THEME_KEY = 'periscope.theme'
const initialTheme = (): Theme => (localStorage.getItem(THEME_KEY) as Theme | null) ?? (matchMedia('(prefers-color-scheme: light)').matches ? 'light' : 'dark')

function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(initialTheme)
  useEffect(() => {
    document.documentElement.dataset.theme = theme
  }, [theme])
  const other: Theme = theme === 'dark' ? 'light' : 'dark'
  return (
    <button
      type="button"
      class="plain theme"
      aria-label={`Switch to the ${other} theme`}
      title={`Switch to the ${other} theme`}
      onClick={() => {
        localStorage.setItem(THEME_KEY, other)
        setTheme(other)
      }}
    >
      {theme === 'dark' ? '☀' : '☾'}
    </button>
  )
}

// ---- the token ----

function TokenDialog() {
  const prompt = useValue(tokenPrompt)
  const ref = useRef<HTMLDialogElement>(null)
  const [token, setToken] = useState('')
  useEffect(() => {
    const dialog = ref.current
    if (!dialog) return
    if (prompt && !dialog.open) {
      setToken('')
      dialog.showModal()
    }
    if (!prompt && dialog.open) dialog.close()
  }, [prompt])
  return (
    <dialog ref={ref} class="dialog" aria-labelledby="token-title" onCancel={(e) => (e.preventDefault(), prompt?.answer(null))}>
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault()
          prompt?.answer(token.trim() || null)
        }}
      >
        <h2 id="token-title">Token needed</h2>
        <p>{prompt?.refused ? 'The service refused that token. Type it again.' : 'This service was started with --token: changes need it (with --token-scope all, so do recordings, logs, events and live video). It is kept for this tab, and as a cookie for the pictures and events the browser fetches by itself until the browser closes.'}</p>
        <label for="token-input">Token</label>
        <input id="token-input" type="password" autocomplete="current-password" value={token} onInput={(e) => setToken(e.currentTarget.value)} autofocus />
        <div class="actions">
          <button type="button" onClick={() => prompt?.answer(null)}>
            Cancel
          </button>
          <button type="submit" class="primary">
            Use token
          </button>
        </div>
      </form>
    </dialog>
  )
}

// ---- shell ----

function Banner() {
  const up = useValue(reachable)
  if (up) return null
  return (
    <div class="banner" role="alert" data-banner="unreachable">
      The service is not answering. Reconnecting by itself; what you see may be out of date.
    </div>
  )
}

/** A stream delivering below its rate, or a viewer lagging or losing packets (stream_status.health.alert), one line a camera, until it clears by itself. */
function HealthBanner() {
  const alerts = (useValue(devices) ?? []).flatMap((d) => (d.stream_status?.health?.alert ? [{ bus_info: d.bus_info, alert: d.stream_status.health.alert }] : []))
  if (!alerts.length) return null
  return (
    <div class="banner warn" role="status" data-banner="stream-health">
      {alerts.map((a) => (
        <div key={a.bus_info} data-alert={a.bus_info}>
          {a.alert}
        </div>
      ))}
    </div>
  )
}

function App() {
  const page = useHashPage()
  useEffect(() => {
    document.title = `${page.title} · Periscope`
  }, [page])
  const Page = page.component
  return (
    <>
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          // The hash names the page: moving focus must not change it.
          e.preventDefault()
          document.getElementById('main')?.focus()
        }}
      >
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Periscope</span>
        <nav aria-label="Pages">
          {PAGES.map((p) => (
            <a key={p.path} href={`#/${p.path}`} aria-current={p === page ? 'page' : undefined} data-nav={p.path}>
              {p.title}
            </a>
          ))}
        </nav>
        <PreviewsSwitch />
        <ThemeToggle />
      </header>
      <Banner />
      <HealthBanner />
      <main id="main" tabIndex={-1} data-page={page.path}>
        <Page />
      </main>
      <Notices />
      <TokenDialog />
    </>
  )
}

document.documentElement.dataset.theme = initialTheme()
connectEvents()
followDevices()
render(<App />, document.body)

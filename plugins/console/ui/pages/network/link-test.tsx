// "Test the tether" (link-test.ts): one button, what it measures now, then the figures in words.
import { useState } from 'preact/hooks'
import { ApiError } from '../../api'
import { testLink, type LinkFigures, type LinkStep } from '../../link-test'

const rate = (mbps: number) => (mbps >= 100 ? `${Math.round(mbps)}` : mbps >= 10 ? mbps.toFixed(1) : mbps.toFixed(2))

export function LinkTest() {
  const [step, setStep] = useState<LinkStep | null>(null)
  const [figures, setFigures] = useState<LinkFigures | null>(null)
  const [error, setError] = useState<string | null>(null)
  const run = async () => {
    setError(null)
    setFigures(null)
    try {
      setFigures(await testLink(setStep))
    } catch (e) {
      setError(e instanceof ApiError ? e.detail : String((e as Error).message ?? e))
    } finally {
      setStep(null)
    }
  }
  return (
    <section class="link-test" aria-labelledby="link-test-title" data-link-test>
      <h2 id="link-test-title">The link to this browser</h2>
      <p class="muted">
        Measures the tether between this browser and the vehicle in under 10 s, while the video keeps playing: throughput both ways, the round trip and its jitter, and the video's loss meanwhile.
      </p>
      <button type="button" class="primary" data-action="test-link" disabled={step !== null} onClick={() => void run()}>
        {step === null ? 'Test the tether' : `Measuring the ${step}…`}
      </button>
      {error && (
        <p class="error-line" role="alert" data-error>
          {error}
        </p>
      )}
      {figures && (
        <dl
          class="link-figures"
          data-down-mbps={figures.downMbps.toFixed(2)}
          data-up-mbps={figures.upMbps.toFixed(2)}
          data-round-trip-ms={figures.roundTripMs.toFixed(2)}
          data-jitter-ms={figures.jitterMs.toFixed(2)}
          data-video-loss={figures.videoLoss === null ? '' : figures.videoLoss.toFixed(3)}
          data-seconds={figures.seconds.toFixed(1)}
        >
          <dt>Vehicle to you</dt>
          <dd>{rate(figures.downMbps)} Mbit/s</dd>
          <dt>You to the vehicle</dt>
          <dd>{rate(figures.upMbps)} Mbit/s</dd>
          <dt>Round trip</dt>
          <dd>
            {figures.roundTripMs.toFixed(1)} ms (jitter {figures.jitterMs.toFixed(1)} ms)
          </dd>
          <dt>Video loss</dt>
          <dd>{figures.videoLoss === null ? 'no WebRTC video was watched' : `${(figures.videoLoss * 100).toFixed(1)} % of the packets`}</dd>
        </dl>
      )}
    </section>
  )
}

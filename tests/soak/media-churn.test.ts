// Soak (`npm run soak`, not in `npm test`): tests/integration/media-churn.test.ts at full scale, 20 rounds
// of MJPEG, RTSP and snapshot viewers with a recording every 5th round, instead of 5 rounds each with one:
// the footprint after more repetitions of the same churn.
import { mediaChurn } from '../integration/media-churn.helpers'

mediaChurn(20, 5, 400_000)

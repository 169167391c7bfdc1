// Soak (`npm run soak`, not in `npm test`): tests/integration/whep-churn.test.ts at full scale, 20 rounds
// (80 sessions) after the warm-up instead of 5: the footprint after more repetitions of the same churn.
import { whepChurn } from '../integration/whep-churn.helpers'

whepChurn(20, 600_000)

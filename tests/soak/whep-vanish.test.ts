// Soak (`npm run soak`, not in `npm test`): tests/integration/whep-vanish.test.ts at full scale, a viewer
// frozen for 20 s instead of 7 (--whep-idle-timeout 25 s instead of 12): more unanswered consent checks
// and more seconds of sends into a full port, the same mechanisms.
import { whepVanish } from '../integration/whep-vanish.helpers'

whepVanish(20_000, 25, 180_000)

// What Cockpit reads from a BlueOS extension (`extras.cockpit` in /register_service names this file;
// Cockpit's src/libs/blueos/schemas.ts `ExtrasJsonSchema` parses it, camelCase as it is): a widget per
// camera (its live view page, ./widget.ts), actions (start and stop recording, a still), and joystick
// suggestions for those actions.
//
// The actions are Cockpit "http-request" actions: Cockpit's page fetch()es them. Their URL is absolute
// (Cockpit builds `new URL(url)`), on `{{ vehicle-address }}`, the data-lake variable Cockpit keeps for
// the vehicle it talks to, and this service's port. They pass the origin rule (docs/security.md)
// because Cockpit runs on the vehicle (BlueOS serves it on the vehicle's address): the vehicle's own
// origins may change things. Cockpit on another origin (its desktop app) needs --cors-origins; with
// --token, the pilot adds `Authorization: Bearer <token>` to the action's headers in Cockpit.
import type { Device } from '../../core/types'
import { widgetPath } from './widget'

/** Cockpit's extras API version this answer is written for (Cockpit checks the major). */
export const TARGET_COCKPIT_API_VERSION = '1.0.0'
export const EXTRAS_PATH = '/cockpit_extras.json'

export interface CockpitAction {
  id: string
  name: string
  type: 'http-request'
  version: string
  config: { name: string; url: string; method: 'POST'; headers: Record<string, string>; urlParams: Record<string, string>; body: string }
}

/** Short ids Cockpit keys its actions and suggestions by: the bus_info's letters and digits. */
const slug = (bus_info: string) => bus_info.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '')

/** The cameras Cockpit gets a widget and actions for: every connected one that streams itself (a follower streams with its leader). */
export const cockpitCameras = (devices: Device[]) => devices.filter((d) => d.connected !== false && !d.leader)

export function extras(devices: Device[], options: { port: number; version: string }) {
  const cameras = cockpitCameras(devices)
  const title = (d: Device) => d.nickname || d.name || d.bus_info
  const action = (d: Device, what: string, label: string, path: string): CockpitAction => ({
    id: `periscope-${what}-${slug(d.bus_info)}`,
    name: `${label}: ${title(d)}`,
    type: 'http-request',
    version: options.version,
    config: {
      name: `${label}: ${title(d)}`,
      url: `http://{{ vehicle-address }}:${options.port}${path}`,
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      urlParams: {},
      body: JSON.stringify({ bus_info: d.bus_info }),
    },
  })
  const actions = cameras.flatMap((d) => [
    action(d, 'start-recording', 'Start recording', '/api/devices/start_recording'),
    action(d, 'stop-recording', 'Stop recording', '/api/devices/stop_recording'),
    action(d, 'still', 'Take a still', '/api/devices/capture_still'),
  ])
  // The first camera's three actions on shift + buttons 12, 13, 14 (free in ArduSub's default mapping
  // with shift); the pilot accepts or changes them in Cockpit's joystick page.
  const first = cameras[0]
  const suggestions = first
    ? [
        {
          id: 'periscope-camera',
          name: `Periscope: ${title(first)}`,
          description: 'Record and take stills with the joystick (shift + a button)',
          version: options.version,
          buttonMappingSuggestions: actions.slice(0, 3).map((a, i) => ({
            id: `${a.id}-button`,
            actionProtocol: 'cockpit-action',
            actionName: a.name,
            actionId: a.id,
            button: 12 + i,
            modifierKey: 'shift',
            description: a.name,
          })),
        },
      ]
    : []
  return {
    targetCockpitApiVersion: TARGET_COCKPIT_API_VERSION,
    targetSystem: 'Cockpit',
    widgets: cameras.map((d) => ({
      name: `Periscope: ${title(d)}`,
      iframeUrl: widgetPath(d.bus_info),
      iframeIcon: '/cockpit-widget-icon.svg',
      version: options.version,
      useExtensionPathAsBaseUrl: true,
    })),
    actions,
    joystickSuggestions: suggestions,
  }
}

/** A camera, for the widget list's icon. */
export const WIDGET_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path fill="#2196f3" d="M4 4h3l2-2h6l2 2h3a2 2 0 0 1 2 2v12a2 2 0 0 1-2 2H4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2m8 3a5 5 0 1 0 0 10 5 5 0 0 0 0-10m0 2a3 3 0 1 1 0 6 3 3 0 0 1 0-6"/></svg>`

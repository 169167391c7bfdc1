// BlueOS: GET /register_service answers what its sidebar reads, the plugin is loaded by default, and the
// Dockerfile's labels (BlueOS's extension metadata) are valid JSON that says what the service needs. The
// container tier checks this same reading of the Dockerfile against the labels of a built image.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { DEFAULT_PLUGINS } from '../../core/config'
import { VERSION } from '../../core/version'
import { readDockerfile } from '../../scripts/container/dockerfile'
import type { TestServer } from '../helpers'
import { startContractServer } from './setup'
import pkg from '../../package.json'

let s: TestServer
beforeAll(async () => {
  s = await startContractServer({ plugins: ['mock', 'cameras', 'blueos'] })
})
afterAll(() => s.stop())

describe('GET /register_service', () => {
  test('answers the seven fields of a BlueOS service, the version being the API version, and works in relative paths', async () => {
    const { status, body, headers } = await s.call('GET', '/register_service')
    expect(status).toBe(200)
    expect(headers.get('content-type')).toStartWith('application/json')
    expect(Object.keys(body).sort()).toEqual(['api', 'company', 'description', 'extras', 'icon', 'name', 'version', 'webpage', 'works_in_relative_paths'])
    const { works_in_relative_paths, extras, ...strings } = body
    // Cockpit reads its widgets, actions and joystick suggestions there (plugins/cockpit/extras.ts).
    expect(extras).toEqual({ cockpit: '/cockpit_extras.json' })
    // Without it BlueOS disables the sidebar entry when it is reached through its web proxy.
    expect(works_in_relative_paths).toBe(true)
    for (const value of Object.values(strings)) expect(typeof value).toBe('string')
    expect(body.name).toBe('Periscope')
    expect(body.version).toBe(VERSION)
    expect(body.version).toBe((await s.call('GET', '/api/health')).body.version)
    // BlueOS draws Material Design Icons by name.
    expect(body.icon).toMatch(/^mdi-[a-z0-9]+(-[a-z0-9]+)*$/)
    expect(body.description.length).toBeGreaterThan(20)
  })

  test('its api link opens the Swagger UI on this port; webpage is a path on this port', async () => {
    const { body } = await s.call('GET', '/register_service')
    expect(body.api).toBe('/docs')
    const docs = await fetch(s.url + body.api)
    expect(docs.status).toBe(200)
    expect(await docs.text()).toContain('swagger-ui')
    expect(body.webpage).toStartWith('/')
  })

  test('is in the OpenAPI document with its answer schema; another method is 405', async () => {
    const doc = (await s.call('GET', '/openapi.json')).body
    const op = doc.paths['/register_service']?.get
    expect(op?.tags).toEqual(['system'])
    const schema = op.responses['200'].content['application/json'].schema
    expect(Object.keys(schema.properties).sort()).toEqual(['api', 'company', 'description', 'extras', 'icon', 'name', 'version', 'webpage', 'works_in_relative_paths'])
    expect([...schema.required].sort()).toEqual(['api', 'company', 'description', 'extras', 'icon', 'name', 'version', 'webpage', 'works_in_relative_paths'])
    const post = await s.call('POST', '/register_service', {})
    expect(post.status).toBe(405)
    expect(post.headers.get('allow')).toContain('GET')
  })

  test("BlueOS's scanner is not a client for the network rollback; a pilot's request is", async () => {
    // The scanner's own requests: http.client with `User-Agent: python`, to /, /register_service, the
    // docs, then every path of the OpenAPI document.
    const scanner = { 'user-agent': 'python', 'accept-encoding': 'gzip, deflate', accept: '*/*' }
    const heard = s.ctx.activity.lastRequestAt
    const doc = (await s.call('GET', '/openapi.json', undefined, scanner)).body
    await Bun.sleep(5) // the clock must be able to move
    for (const path of ['/', '/register_service', '/docs', ...Object.keys(doc.paths).filter((p) => !p.includes('{'))])
      await fetch(s.url + path, { headers: scanner }).then((r) => r.body?.cancel()) // the event stream never ends
    expect(s.ctx.activity.lastRequestAt).toBe(heard)
    // /register_service is polled by machines whatever their agent.
    await fetch(s.url + '/register_service').then((r) => r.arrayBuffer())
    expect(s.ctx.activity.lastRequestAt).toBe(heard)
    await fetch(s.url + '/api/devices', { headers: { 'user-agent': 'Mozilla/5.0' } }).then((r) => r.arrayBuffer())
    expect(s.ctx.activity.lastRequestAt).toBeGreaterThan(heard)
  })

  test('the plugin is among the default plugins', () => {
    expect(DEFAULT_PLUGINS).toContain('blueos')
  })
})

describe('the Dockerfile (the container image and BlueOS extension)', () => {
  const dockerfile = readDockerfile()
  const labels = dockerfile.labels
  const json = (name: string) => {
    expect(labels[name]).toBeString()
    return JSON.parse(labels[name]!)
  }

  test('carries every label BlueOS reads; the JSON ones parse', () => {
    for (const name of ['version', 'permissions', 'authors', 'company', 'readme', 'links', 'type', 'tags']) expect(labels[name]).toBeString()
    expect(labels.version).toBe(VERSION)
    const authors = json('authors')
    expect(authors).toBeArray()
    expect(authors.length).toBeGreaterThan(0)
    for (const author of authors) expect(author.name).toBeString()
    expect(json('company').name).toBeString()
    const links = json('links')
    for (const url of [labels.readme!, ...Object.values(links)]) expect(() => new URL(url as string)).not.toThrow()
    const tags = json('tags')
    expect(tags).toBeArray()
    for (const tag of tags) expect(tag).toMatch(/^[a-z0-9-]+$/)
    expect(labels.type).toMatch(/^[a-z-]+$/)
  })

  test("BlueOS's own models accept the labels and the /register_service answer (pydantic v2, as BlueOS validates them)", async () => {
    const python = join(import.meta.dir, '..', '..', '.tmp', 'fastapi-venv', 'bin', 'python')
    if (!existsSync(python)) throw new Error(`${python} is missing: run scripts/setup/fastapi.sh (npm test runs it as the contract tier's setup)`)
    const register_service = (await s.call('GET', '/register_service')).body
    const check = (input: unknown) => {
      const r = Bun.spawnSync([python, join(import.meta.dir, 'blueos', 'blueos_models.py')], { stdin: new TextEncoder().encode(JSON.stringify(input)) })
      return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() }
    }
    const ok = check({ labels, register_service })
    expect(ok.err).toBe('')
    expect(ok.code).toBe(0)
    const read = JSON.parse(ok.out)
    expect(read.works_in_relative_paths).toBe(true)
    expect(read.extras).toEqual({ cockpit: '/cockpit_extras.json' })
    expect(read.type).toBe('device-integration')
    for (const author of read.authors) expect(author.email).toMatch(/^[^@\s]+@[^@\s]+$/)
    // The model is not a happy-path echo: an author without an email is refused, as BlueOS refuses it.
    const bad = check({ labels: { ...labels, authors: JSON.stringify([{ name: 'x' }]) }, register_service })
    expect(bad.code).not.toBe(0)
    expect(bad.err).toContain('email')
  })

  test('permissions: host network, /dev, /sys, the D-Bus socket, the data directory, and hot-plugged cameras and serial boards', () => {
    const { HostConfig } = json('permissions')
    expect(HostConfig.NetworkMode).toBe('host')
    const binds = new Map<string, string>((HostConfig.Binds as string[]).map((b) => [b.split(':')[1]!, b.split(':')[0]!]))
    expect(binds.get('/dev')).toBe('/dev')
    expect(binds.get('/sys')).toBe('/sys')
    // The system bus socket NetworkManager answers on (drivers/networkmanager/bus.ts: /var/run/dbus/system_bus_socket).
    expect(binds.get('/run/dbus')).toBe('/run/dbus')
    // Settings and recordings live in the image's data directory, which a host directory keeps.
    expect(binds.get(dockerfile.env.PERISCOPE_DATA_DIR!)).toStartWith('/')
    // V4L2 (81), ttyACM (166) and ttyUSB (188) devices plugged in after the container started.
    const majors = (HostConfig.DeviceCgroupRules as string[]).map((r) => r.match(/^c (\d+):\* rwm$/)?.[1])
    expect(majors.sort()).toEqual(['166', '188', '81'])
  })

  test('runs the service on 8080 with its data on the volume, with Bun pinned as package.json pins it', () => {
    const keyword = (k: string) => dockerfile.instructions.filter((i) => i.keyword === k)
    expect(dockerfile.env.PERISCOPE_PORT).toBe('8080')
    expect(keyword('VOLUME').map((i) => i.args)).toEqual([dockerfile.env.PERISCOPE_DATA_DIR!])
    expect(JSON.parse(keyword('CMD').at(-1)!.args)).toEqual(['bun', 'run', 'core/main.ts'])
    expect(dockerfile.args.BUN_VERSION).toBe(pkg.devDependencies.bun)
    // Every top-level folder the service's code imports from goes into the image (media/ once did not,
    // and the container stopped at its first import).
    const root = join(import.meta.dir, '..', '..')
    const copied = keyword('COPY').map((i) => i.args)
    const imported = new Set<string>(['core', 'plugins'])
    for (const dir of ['core', 'drivers', 'media', 'plugins']) {
      for (const file of readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })) {
        if (!/\.tsx?$/.test(file) || file.includes('/ui/')) continue
        const text = readFileSync(join(root, dir, file), 'utf8')
        for (const [, spec] of text.matchAll(/from '(\.[^']+)'/g)) {
          const top = relative(root, resolve(join(root, dir, file, '..'), spec!)).split('/')[0]!
          if (existsSync(join(root, top)) && statSync(join(root, top)).isDirectory()) imported.add(top)
        }
      }
    }
    expect([...imported].sort()).toEqual(['core', 'drivers', 'media', 'plugins'])
    for (const dir of imported) expect(copied).toContain(`${dir} ${dir}`)
  })
})

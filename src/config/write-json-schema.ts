import { writeFile } from 'node:fs/promises'
import { z } from 'zod'
import { configSchema } from './schema.ts'

// Regenerates config/gateway.schema.json for editors (npm run schema); a unit test keeps it in sync.
export function configJsonSchema (): Record<string, unknown> {
  return {
    ...z.toJSONSchema(configSchema, { io: 'input' }),
    title: 'Switchboard gateway configuration'
  }
}

if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  await writeFile(new URL('../../config/gateway.schema.json', import.meta.url), JSON.stringify(configJsonSchema(), null, 2) + '\n')
}

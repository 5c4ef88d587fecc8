// What the backend in use serves, from its get_server_capabilities: every backend names its models;
// the local engine adds each one's real shape (engine/tinker_engine/model_shape.py).
import { z } from 'zod';

const count = z.number().int().nonnegative().optional();

const ServedModelSchema = z.object({
  model_name: z.string().min(1),
  max_context_length: count,
  arch: z.string().optional(),
  num_hidden_layers: count,
  hidden_size: count,
  vocab_size: count,
  num_parameters: count,
  tokenizer_id: z.string().optional(),
  source: z.enum(['builtin', 'checkpoint']).optional(),
  checkpoint_dir: z.string().optional(),
});

export type ServedModel = z.infer<typeof ServedModelSchema>;

const CapabilitiesSchema = z.object({
  // A backend may list entries without a name (the protocol makes it optional): they are skipped.
  supported_models: z.array(z.unknown()),
});

export type Served = { url: string; models: ServedModel[] } | { url: string; unreachable: string };

/** The models `baseUrl` serves, or why it did not say. */
export async function servedModels(baseUrl: string, apiKey: string | undefined, timeoutMs = 5000): Promise<Served> {
  let res: Response;
  try {
    res = await fetch(new URL('api/v1/get_server_capabilities', baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`), {
      headers: apiKey ? { 'X-API-Key': apiKey } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    // fetch says only "fetch failed"; the cause says why (ECONNREFUSED, a timeout, a bad port).
    const e = err as Error & { cause?: { code?: string; message?: string } };
    return { url: baseUrl, unreachable: e.cause?.code ?? e.cause?.message ?? e.message };
  }
  if (!res.ok) return { url: baseUrl, unreachable: `HTTP ${res.status} to get_server_capabilities${res.status === 401 || res.status === 403 ? '; check TINKER_API_KEY' : ''}` };
  const body = CapabilitiesSchema.safeParse(await res.json().catch(() => undefined));
  if (!body.success) return { url: baseUrl, unreachable: 'its get_server_capabilities answer has no supported_models list' };
  const models = body.data.supported_models.flatMap((m) => {
    const parsed = ServedModelSchema.safeParse(withModelName(m));
    if (parsed.success) return [parsed.data];
    // A name with a shape field this client does not understand: keep the name.
    const name = (withModelName(m) as { model_name?: unknown } | null)?.model_name;
    return typeof name === 'string' && name ? [{ model_name: name }] : [];
  });
  return { url: baseUrl, models };
}

/** An entry that names its model under `model_id` (hatchery-core) is read as if it said `model_name`. */
function withModelName(m: unknown): unknown {
  if (!m || typeof m !== 'object') return m;
  const o = m as { model_name?: unknown; model_id?: unknown };
  return !o.model_name && typeof o.model_id === 'string' ? { ...o, model_name: o.model_id } : m;
}

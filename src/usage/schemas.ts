import { z } from 'zod'
import { PLANS } from '../shared/plans.js'
import { METRICS } from './plans.js'

/** The most one increment may count. */
export const MAX_AMOUNT = 1000

const MetricSchema = z.enum(METRICS).meta({ id: 'UsageMetric' })

/** The metric is the REST path's; without an amount (or without a body) the increment counts 1. */
export const IncrementInput = z
  .strictObject({
    metric: MetricSchema,
    amount: z.number().int().min(1).max(MAX_AMOUNT).optional().describe('Default 1'),
  })
  .meta({ examples: [{ metric: 'aiMessages' }, { metric: 'aiMessages', amount: 1 }] })

const resetsAt = z.date().describe('ISO-8601 UTC: the start of the next UTC day or month, when the count starts over')

export const PlanAndUsageSchema = z
  .object({
    plan: z.enum(PLANS).describe('The plan in force: a paid plan whose planExpiresAt has passed counts as free'),
    planExpiresAt: z
      .date()
      .nullable()
      .describe('When the paid plan ends (in the past once it lapsed); null when it does not lapse'),
    usage: z.array(
      z.object({
        metric: MetricSchema,
        used: z.number().int(),
        limit: z.number().int().nullable().describe('null = unlimited'),
        period: z.enum(['day', 'month']),
        resetsAt,
      }),
    ),
  })
  .meta({
    id: 'PlanAndUsage',
    examples: [
      {
        plan: 'free',
        planExpiresAt: null,
        usage: [
          { metric: 'aiMessages', used: 4, limit: 10, period: 'day', resetsAt: '2026-03-05T00:00:00.000Z' },
          { metric: 'compatibilityChecks', used: 1, limit: 3, period: 'month', resetsAt: '2026-04-01T00:00:00.000Z' },
          { metric: 'journalEntries', used: 0, limit: 5, period: 'day', resetsAt: '2026-03-05T00:00:00.000Z' },
        ],
      },
    ],
  })

export const UsageResultSchema = z
  .object({
    metric: MetricSchema,
    used: z.number().int(),
    limit: z.number().int().nullable().describe('null = unlimited'),
    remaining: z.number().int().nullable().describe('null = unlimited'),
    resetsAt,
  })
  .meta({
    id: 'UsageIncrement',
    examples: [
      { metric: 'aiMessages', used: 5, limit: 10, remaining: 5, resetsAt: '2026-03-05T00:00:00.000Z' },
      { metric: 'aiMessages', used: 31, limit: null, remaining: null, resetsAt: '2026-03-05T00:00:00.000Z' },
    ],
  })

// Documents the 402 body; error bodies themselves are written by the error handler, not this schema.
export const PlanLimitErrorSchema = z
  .object({
    code: z.literal('PLAN_LIMIT_REACHED'),
    status: z.literal(402),
    message: z.string(),
    data: z.object({
      metric: MetricSchema,
      limit: z.number().int().describe('The limit of the plan in force'),
      used: z.number().int().describe('The count of the current period; unchanged by the refused call'),
      resetsAt,
    }),
    defined: z.literal(false),
  })
  .meta({
    id: 'PlanLimitError',
    examples: [
      {
        code: 'PLAN_LIMIT_REACHED',
        status: 402,
        message: 'The aiMessages limit of your plan is reached',
        data: { metric: 'aiMessages', limit: 10, used: 10, resetsAt: '2026-03-05T00:00:00.000Z' },
        defined: false,
      },
    ],
  })

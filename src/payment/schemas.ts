import { z } from 'zod'
import { CursorParam, Limit } from '../shared/cursor.js'
import { Id } from '../shared/validation.js'
import { PRODUCTS } from './products.js'

export const PAYMENT_STATUSES = ['pending', 'paid', 'failed', 'expired', 'refunded'] as const
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number]
export const PROVIDERS = ['sandbox', 'stripe', 'midtrans'] as const
export type Provider = (typeof PROVIDERS)[number]

export const CheckoutBody = z
  .strictObject({
    product: z.enum(PRODUCTS),
    resultId: Id.optional(),
    returnUrl: z.string().min(1).max(2048),
  })
  .superRefine((body, ctx) => {
    if (body.product === 'deep_insights' && body.resultId === undefined) {
      ctx.addIssue({ code: 'custom', path: ['resultId'], message: 'resultId is required for deep_insights' })
    }
    if (body.product !== 'deep_insights' && body.resultId !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['resultId'], message: 'resultId is only for deep_insights' })
    }
  })

export const CheckoutResponse = z.object({
  paymentId: z.string(),
  provider: z.enum(PROVIDERS),
  redirectUrl: z.string(),
  expiresAt: z.date(),
})

export const PaymentIdParams = z.strictObject({ paymentId: Id })
export const ProviderParams = z.strictObject({ provider: z.enum(PROVIDERS) })

export const VerifyResponse = z.object({
  paymentId: z.string(),
  status: z.enum(PAYMENT_STATUSES),
  product: z.string(),
  grantedAt: z.date().nullable(),
})

const PaymentSchema = z
  .object({
    id: z.string(),
    product: z.string(),
    amount: z.number().int().describe('Integer rupiah'),
    currency: z.string(),
    status: z.enum(PAYMENT_STATUSES),
    provider: z.enum(PROVIDERS),
    resultId: z.string().nullable(),
    grantedAt: z.date().nullable(),
    expiresAt: z.date(),
    createdAt: z.date(),
    updatedAt: z.date(),
  })
  .meta({ id: 'Payment' })

export const PaymentPageSchema = z.object({ items: z.array(PaymentSchema), nextCursor: z.string().nullable() })

export const ListQuery = z.strictObject({ limit: Limit, cursor: CursorParam.optional() })

import { z } from 'zod'
import { iso } from '../shared/dates.js'
import { CursorParam, Limit, type Page } from '../shared/pagination.js'
import { Id } from '../shared/validation.js'
import { PRODUCTS } from './products.js'
import type { Checkout, PaymentStatusView, PaymentView } from './service.js'
import { PAYMENT_STATUSES, PROVIDERS } from './tables.js'

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
  expiresAt: z.string(),
})

export const PaymentIdParams = z.strictObject({ paymentId: Id })
export const ProviderParams = z.strictObject({ provider: z.enum(PROVIDERS) })

export const VerifyResponse = z.object({
  paymentId: z.string(),
  status: z.enum(PAYMENT_STATUSES),
  product: z.string(),
  grantedAt: z.string().nullable(),
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
    grantedAt: z.string().nullable(),
    expiresAt: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Payment' })

export const PaymentPageSchema = z.object({ items: z.array(PaymentSchema), nextCursor: z.string().nullable() })

export const ListQuery = z.strictObject({ limit: Limit, cursor: CursorParam.optional() })

export const toCheckoutJson = (checkout: Checkout) => ({ ...checkout, expiresAt: checkout.expiresAt.toISOString() })

export const toPaymentStatusJson = (status: PaymentStatusView) => ({ ...status, grantedAt: iso(status.grantedAt) })

const toPaymentJson = (payment: PaymentView) => ({
  ...payment,
  grantedAt: iso(payment.grantedAt),
  expiresAt: payment.expiresAt.toISOString(),
  createdAt: payment.createdAt.toISOString(),
  updatedAt: payment.updatedAt.toISOString(),
})

export const toPaymentPageJson = (page: Page<PaymentView>) => ({
  items: page.items.map(toPaymentJson),
  nextCursor: page.nextCursor,
})

// The one product table. Prices are integer rupiah (IDR has no minor unit in everyday use).
import type { Plan } from '../shared/plans.js'

export const PRODUCTS = ['deep_insights', 'premium_month', 'premium_plus_month'] as const
export type Product = (typeof PRODUCTS)[number]

interface ProductInfo {
  name: string
  amount: number
  currency: 'IDR'
  /** The plan a purchase grants for PLAN_DAYS, or null for a one-time unlock. */
  plan: Exclude<Plan, 'free'> | null
}

export const PRODUCT_TABLE: Record<Product, ProductInfo> = {
  deep_insights: { name: 'Deep insights (one compatibility result)', amount: 49_000, currency: 'IDR', plan: null },
  premium_month: { name: 'Premium, 30 days', amount: 79_000, currency: 'IDR', plan: 'premium' },
  premium_plus_month: { name: 'Premium Plus, 30 days', amount: 149_000, currency: 'IDR', plan: 'premium_plus' },
}

export const PLAN_DAYS = 30
/** How long a checkout stays open at the gateway. Stripe accepts 30 minutes to 24 hours. */
export const CHECKOUT_TTL_MINUTES = 60

export const isProduct = (value: string): value is Product => (PRODUCTS as readonly string[]).includes(value)

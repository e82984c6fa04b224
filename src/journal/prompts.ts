// The daily journaling prompts shipped with the service. Each prompt exists in Indonesian and
// English under one id, so an entry's promptId means the same question in either language.
// Add new prompts at the end so existing ids keep their text (the rotation itself will shift).

const PROMPT_LOCALES = ['id', 'en'] as const
export type PromptLocale = (typeof PROMPT_LOCALES)[number]

interface Prompt {
  id: string
  id_text: string
  en_text: string
}

const PAIRS: Array<[id: string, en: string]> = [
  [
    'Apa satu hal kecil hari ini yang membuatmu tersenyum, dan mengapa hal itu berarti bagimu?',
    'What is one small thing today that made you smile, and why did it matter to you?',
  ],
  [
    'Emosi apa yang paling sering muncul minggu ini? Di bagian tubuh mana kamu merasakannya?',
    'Which emotion showed up most often this week? Where in your body did you feel it?',
  ],
  [
    'Tuliskan surat singkat untuk dirimu lima tahun yang lalu. Apa yang ingin kamu katakan?',
    'Write a short letter to yourself five years ago. What would you want them to know?',
  ],
  [
    'Kapan terakhir kali kamu merasa benar-benar tenang? Apa yang ada di sekitarmu saat itu?',
    'When did you last feel truly at peace? What was around you in that moment?',
  ],
  [
    'Kebiasaan apa yang ingin kamu lepaskan, dan apa yang sebenarnya dilindungi oleh kebiasaan itu?',
    'Which habit would you like to let go of, and what has that habit been protecting you from?',
  ],
  [
    'Siapa orang yang diam-diam kamu syukuri kehadirannya? Apa yang ingin kamu sampaikan kepadanya?',
    'Who are you quietly grateful for? What would you like to tell them?',
  ],
  [
    'Keputusan apa yang sedang kamu tunda? Apa yang paling kamu takutkan jika memutuskannya sekarang?',
    'What decision are you putting off? What do you fear most about making it now?',
  ],
  [
    'Gambarkan hari yang ideal bagimu dari bangun tidur sampai tidur lagi. Bagian mana yang sudah bisa kamu wujudkan minggu ini?',
    'Describe your ideal day from waking up to falling asleep. Which part of it could you have this week?',
  ],
  [
    'Apa yang membuatmu lelah akhir-akhir ini, dan apa yang benar-benar bisa memulihkan tenagamu?',
    'What has been draining you lately, and what truly restores your energy?',
  ],
  [
    'Kritik apa yang pernah kamu terima dan ternyata membantumu bertumbuh?',
    'What criticism did you once receive that turned out to help you grow?',
  ],
  [
    'Jika perasaanmu hari ini adalah cuaca, seperti apa cuacanya? Ceritakan.',
    'If your mood today were the weather, what would the forecast be? Describe it.',
  ],
  [
    'Batasan apa yang perlu kamu jaga dengan lebih tegas, dan dengan siapa?',
    'Which boundary do you need to hold more firmly, and with whom?',
  ],
  [
    'Apa pencapaian kecil bulan ini yang belum sempat kamu rayakan?',
    'What small achievement from this month have you not celebrated yet?',
  ],
  [
    'Tuliskan tiga hal yang kamu sukai dari dirimu, tanpa kata "tetapi".',
    'Write down three things you like about yourself, without using the word "but".',
  ],
  [
    'Kekhawatiran apa yang terus berputar di kepalamu? Mana yang bisa kamu kendalikan, mana yang tidak?',
    'What worry keeps circling in your mind? Which parts can you control, and which can you not?',
  ],
  [
    'Kapan kamu merasa paling menjadi dirimu sendiri? Apa yang sedang kamu lakukan saat itu?',
    'When do you feel most like yourself? What are you usually doing then?',
  ],
  [
    'Pelajaran apa yang kamu dapat dari sebuah kegagalan, yang tidak akan kamu dapat dari keberhasilan?',
    'What did a failure teach you that a success never could have?',
  ],
  [
    'Apa yang ingin kamu maafkan, entah dari orang lain atau dari dirimu sendiri?',
    'What would you like to forgive, whether in someone else or in yourself?',
  ],
  [
    'Percakapan apa hari ini yang masih kamu pikirkan? Apa yang membuatnya melekat?',
    'Which conversation from today is still on your mind? What makes it stick?',
  ],
  [
    'Nilai hidup apa yang paling penting bagimu saat ini? Apakah hari-harimu sudah mencerminkannya?',
    'Which value matters most to you right now? Do your days reflect it?',
  ],
  ['Apa yang sedang kamu nantikan dalam waktu dekat, sekecil apa pun?', 'What are you looking forward to soon, however small?'],
  [
    'Ceritakan satu kenangan masa kecil yang masih terasa hangat sampai sekarang.',
    'Describe a childhood memory that still feels warm today.',
  ],
  [
    'Bagaimana kamu memperlakukan dirimu saat melakukan kesalahan? Bagaimana kamu akan memperlakukan sahabatmu?',
    'How do you treat yourself when you make a mistake? How would you treat a close friend?',
  ],
  [
    'Apa yang kamu pelajari tentang dirimu dari hubungan terdekatmu?',
    'What have your closest relationships taught you about yourself?',
  ],
  [
    'Jika kamu tidak takut dinilai orang lain, apa yang akan kamu coba?',
    'If you were not afraid of being judged, what would you try?',
  ],
  [
    'Tempat mana yang membuatmu merasa aman? Apa yang membuatnya terasa seperti rumah?',
    'Which place makes you feel safe? What makes it feel like home?',
  ],
  [
    'Apa yang ingin kamu katakan "tidak" lebih sering, agar bisa mengatakan "ya" pada hal yang penting?',
    'What do you want to say "no" to more often, so you can say "yes" to what matters?',
  ],
  [
    'Bagaimana tidurmu akhir-akhir ini, dan apa yang memengaruhinya?',
    'How have you been sleeping lately, and what has been affecting it?',
  ],
  [
    'Sifat apa dari orang yang kamu kagumi yang ingin kamu tumbuhkan dalam dirimu?',
    'Which quality of someone you admire would you like to grow in yourself?',
  ],
  [
    'Momen apa minggu ini yang membuatmu merasa terhubung dengan orang lain?',
    'Which moment this week made you feel connected to someone?',
  ],
  [
    'Apa yang sedang kamu pikul sendirian, padahal bisa kamu bagi dengan seseorang?',
    'What are you carrying alone that you could share with someone?',
  ],
  [
    'Jika tahun ini adalah sebuah bab dalam buku hidupmu, apa judulnya?',
    'If this year were a chapter in the book of your life, what would its title be?',
  ],
  [
    'Apa satu hal yang ingin kamu lakukan dengan lebih pelan dan penuh perhatian besok?',
    'What is one thing you want to do more slowly and mindfully tomorrow?',
  ],
  [
    'Kapan kamu terakhir kali merasa bangga pada dirimu? Apa yang membuatmu bangga?',
    'When were you last proud of yourself? What made you proud?',
  ],
  ['Apa yang ingin kamu ingat dari hari ini setahun lagi?', 'What would you like to remember about today a year from now?'],
]

export const PROMPTS: readonly Prompt[] = PAIRS.map(([idText, enText], i) => ({
  id: `p${String(i + 1).padStart(3, '0')}`,
  id_text: idText,
  en_text: enText,
}))

const DAY_MS = 86_400_000

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b)
}

// A fixed stride coprime with the list length: consecutive days get different prompts, and every
// prompt comes round once per cycle, without neighbours in the list landing on neighbouring days.
const STRIDE = (() => {
  let s = Math.max(2, Math.floor(PROMPTS.length * 0.618))
  while (gcd(s, PROMPTS.length) !== 1) s++
  return s
})()

/** The question of one calendar day in one locale. */
export interface DailyPrompt {
  id: string
  date: string
  text: string
  locale: PromptLocale
}

/** The prompt of a calendar day: the same for everybody on that date and locale. */
export function promptOfDay(date: string, locale: PromptLocale): DailyPrompt {
  const day = Math.floor(Date.parse(`${date}T00:00:00Z`) / DAY_MS)
  const n = PROMPTS.length
  const index = (((day * STRIDE) % n) + n) % n
  const prompt = PROMPTS[index]!
  return { id: prompt.id, date, text: locale === 'id' ? prompt.id_text : prompt.en_text, locale }
}

/** 'id', 'id-ID', 'in' (the legacy code for Indonesian) -> 'id'; every other language -> 'en'. */
export function promptLocale(tag: string | null | undefined): PromptLocale {
  const language = tag?.split('-', 1)[0]?.toLowerCase()
  return language === 'id' || language === 'in' ? 'id' : 'en'
}

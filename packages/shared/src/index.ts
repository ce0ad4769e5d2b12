export const hello: string = 'x';

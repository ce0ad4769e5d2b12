import { hello } from '@warmpath/shared';
console.log(hello);
